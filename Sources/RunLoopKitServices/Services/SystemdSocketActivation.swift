import Glibc
import RunLoopKit
import RunLoopKitSystem

/// The descriptors the service manager passed at start (what `sd_listen_fds_with_names(3)` answers): listening
/// sockets of the unit's `.socket` units, and whatever the service put in the fd store before a restart (see
/// ``SystemdNotifier/storeDescriptors(_:name:pollForHangUp:)``), spoken directly, no libsystemd.
///
/// systemd passes them from descriptor 3 on and says so in three variables: `LISTEN_PID` (the process they are
/// for), `LISTEN_FDS` (how many) and `LISTEN_FDNAMES` (their names, `:`-separated; `FileDescriptorName=` of the
/// socket unit, the `FDNAME=` they were stored with, or the socket unit's name). ``adopt(environment:)`` checks
/// them, marks each descriptor close-on-exec and removes the variables from the environment (a child process must
/// not take them for its own). Watch a listening socket with a `FileDescriptorSource` for `.readable` and
/// `accept(2)` when it fires.
///
/// Threading: a value type; ``adopt(environment:)`` reads and changes the process's environment, so call it once at
/// start-up, before other threads that use the environment run.
public struct SystemdSocketActivation: Sendable {
    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: CInt = 3

    /// The name a descriptor gets when `LISTEN_FDNAMES` is absent.
    public static let unnamed = "unknown"

    /// One passed descriptor and its name.
    public struct Descriptor: Sendable, Hashable {
        /// The descriptor number, from ``SystemdSocketActivation/firstDescriptor`` on. The process owns it.
        public let descriptor: CInt
        /// Its name from `LISTEN_FDNAMES`, or ``SystemdSocketActivation/unnamed``.
        public let name: String
    }

    /// The passed descriptors in order; empty when the process was not socket-activated.
    public let descriptors: [Descriptor]

    /// Whether nothing was passed.
    public var isEmpty: Bool { descriptors.isEmpty }

    /// The descriptors passed under `name`, in order (several sockets of one unit may share a name).
    public func descriptors(named name: String) -> [CInt] {
        descriptors.filter { $0.name == name }.map(\.descriptor)
    }

    /// Takes over the descriptors the service manager passed to this process.
    ///
    /// Answers an empty value when `LISTEN_PID` is absent or names another process (the variables were inherited
    /// from a parent), `LISTEN_PIDFDID` names another process (a pid reused), or `LISTEN_FDS` is absent. Reading the
    /// process's environment (`environment` `nil`, the default), the variables (`LISTEN_PID`, `LISTEN_PIDFDID`,
    /// `LISTEN_FDS`, `LISTEN_FDNAMES`) are removed from it whatever the outcome, as `sd_listen_fds(3)` does; a
    /// dictionary (for tests) is only read.
    ///
    /// The variables are checked as `sd_listen_fds_with_names(3)` checks them, and every descriptor they promise is
    /// checked open before anything is allocated for it or changed: nothing outside the process can make this
    /// allocate in proportion to a number it made up. `LISTEN_FDS=0` is malformed, as `sd_listen_fds` says
    /// (`-EINVAL`): systemd never sets it (it sets no variable when it passes nothing), so a value of 0 comes from
    /// something that is not a service manager speaking this protocol. `LISTEN_FDNAMES` holds one name per
    /// descriptor, `:`-separated; an empty value holds none.
    /// - Parameter environment: Where the variables are read; `nil` reads (and then clears) the process's.
    /// - Throws: `LoopError.Code.invalidArgument`, with nothing adopted, when `LISTEN_PID` is not a positive decimal
    ///   number, `LISTEN_PIDFDID` is not a decimal number, `LISTEN_FDS` is not a decimal number from 1 to
    ///   `Int32.max - 3`, or `LISTEN_FDNAMES` does not hold one name per descriptor; `LoopError.Code.badDescriptor`
    ///   (`EBADF`) when a descriptor the variables promise is not open.
    public static func adopt(environment: [String: String]? = nil) throws(LoopError) -> SystemdSocketActivation {
        let names = ["LISTEN_PID", "LISTEN_PIDFDID", "LISTEN_FDS", "LISTEN_FDNAMES"]
        let values = names.map { name in environment.map { $0[name] } ?? ProcessEnvironment.value(name) }
        if environment == nil { names.forEach(ProcessEnvironment.unset) }
        let variables = Variables(pid: values[0], pidFDID: values[1], count: values[2], names: values[3])
        guard let promise = try variables.promise(processID: getpid(), processIdentity: ownPidFDIdentity) else {
            return SystemdSocketActivation(descriptors: [])
        }
        return SystemdSocketActivation(descriptors: try adopt(promise))
    }

    /// The raw values of the variables, as the environment holds them (`nil`: not set).
    package struct Variables: Sendable {
        package var pid, pidFDID, count, names: String?

        /// The variables' values.
        package init(pid: String?, pidFDID: String? = nil, count: String?, names: String?) {
            self.pid = pid
            self.pidFDID = pidFDID
            self.count = count
            self.names = names
        }

        /// What the variables promise to process `processID` (whose pidfd inode `processIdentity` answers, `nil`
        /// when the kernel has no such identity): how many descriptors from 3 on, and their names; `nil` when they
        /// promise it nothing. Checks only the text; allocates nothing in proportion to the count.
        /// - Throws: `LoopError.Code.invalidArgument` as ``SystemdSocketActivation/adopt(environment:)`` says.
        package func promise(
            processID: pid_t, processIdentity: () -> UInt64?
        ) throws(LoopError) -> Promise? {
            guard let pid else { return nil }
            guard let listenPID = decimal(pid, upTo: Int(Int32.max)), listenPID > 0 else {
                throw LoopError(.invalidArgument, message: "LISTEN_PID \"\(pid)\" is not a process id")
            }
            guard listenPID == Int(processID) else { return nil }
            if let pidFDID {
                guard isDecimal(pidFDID), let identity = UInt64(pidFDID) else {
                    throw LoopError(
                        .invalidArgument, message: "LISTEN_PIDFDID \"\(pidFDID)\" is not a pidfd inode number")
                }
                // Where the kernel gives pidfds no inode of their own (before Linux 6.9) there is nothing to compare.
                if let own = processIdentity(), identity != own { return nil }
            }
            guard let count else { return nil }
            // Descriptors are ints from 3 on: more than that many cannot have been passed. Zero is sd_listen_fds's
            // -EINVAL too: systemd sets no variable at all when it passes nothing.
            guard let number = decimal(count, upTo: Int(Int32.max - SystemdSocketActivation.firstDescriptor)),
                number > 0
            else {
                throw LoopError(
                    .invalidArgument, message: "LISTEN_FDS \"\(count)\" is not a number of descriptors (1 or more)")
            }
            if let names {
                // Counted, not split: a made-up LISTEN_FDS meets its mismatch before anything is allocated.
                let nameCount = names.isEmpty ? 0 : names.utf8.reduce(1) { $1 == UInt8(ascii: ":") ? $0 + 1 : $0 }
                guard nameCount == number else {
                    throw LoopError(
                        .invalidArgument,
                        message: "LISTEN_FDNAMES \"\(names)\" holds \(nameCount) names for \(number) descriptors")
                }
            }
            return Promise(count: number, names: names)
        }

        /// The value of `text`, a decimal number of at most `limit`, or `nil`.
        private func decimal(_ text: String, upTo limit: Int) -> Int? {
            guard isDecimal(text), let value = Int(text), value <= limit else { return nil }
            return value
        }

        /// Whether `text` is digits only (no sign, no space: what systemd writes).
        private func isDecimal(_ text: String) -> Bool {
            !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
    }

    /// What the variables promise: `count` descriptors from 3 on, named by `names` (`:`-separated, one per
    /// descriptor) or all ``SystemdSocketActivation/unnamed``.
    package struct Promise: Sendable, Equatable {
        /// How many descriptors, from 1 to `Int32.max - 3`: checked against the text only, not yet against what is
        /// open.
        package let count: Int
        /// `LISTEN_FDNAMES`, holding exactly `count` names, or `nil`.
        package let names: String?
    }

    /// The promised descriptors, each checked open before anything is allocated for them, then marked
    /// close-on-exec. Checking stops at the first one that is not open, so it costs at most one `fcntl(2)` per
    /// descriptor the process really has, whatever the count says.
    /// - Throws: `LoopError.Code.badDescriptor` (`EBADF`) when one is not open, with nothing changed.
    package static func adopt(_ promise: Promise) throws(LoopError) -> [Descriptor] {
        for offset in 0..<promise.count {
            let descriptor = firstDescriptor + CInt(offset)
            guard FileDescriptorCalls.isOpen(descriptor) else {
                throw LoopError(
                    .badDescriptor, errno: EBADF,
                    message: "LISTEN_FDS promises \(promise.count) descriptors from 3 on, but \(descriptor) is not open"
                )
            }
        }
        // Every one is open: the count is bounded by the process's own descriptors from here on.
        let labels =
            promise.names.map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) }
            ?? Array(repeating: unnamed, count: promise.count)
        let passed = labels.indices.map { Descriptor(descriptor: firstDescriptor + CInt($0), name: labels[$0]) }
        for entry in passed {
            do {
                try FileDescriptorCalls.setCloseOnExec(entry.descriptor)
            } catch {
                throw LoopError(
                    systemCall: error, context: "marking passed descriptor \(entry.descriptor) close-on-exec")
            }
        }
        return passed
    }

    /// The inode number of a pidfd of this process, which `LISTEN_PIDFDID` names (Linux 6.9+, where pidfds have
    /// inodes of their own); `nil` on older kernels or when no pidfd can be opened.
    private static func ownPidFDIdentity() -> UInt64? {
        guard let descriptor = try? PidFD.open(getpid()) else { return nil }
        defer { FileDescriptorCalls.close(descriptor) }
        guard !FileDescriptorCalls.isAnonymousInode(descriptor) else { return nil }
        return FileDescriptorCalls.identity(of: descriptor)?.inode
    }
}
