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
    /// from a parent), or `LISTEN_FDS` is absent. Reading the process's environment (`environment` `nil`, the
    /// default), the three variables are removed from it whatever the outcome, as `sd_listen_fds(1)` does;
    /// a dictionary (for tests) is only read.
    /// - Parameter environment: Where the variables are read; `nil` reads (and then clears) the process's.
    /// - Throws: `LoopError.Code.invalidArgument`, with nothing adopted, when `LISTEN_PID` or `LISTEN_FDS` is not a
    ///   number, `LISTEN_FDS` is negative or too large, or `LISTEN_FDNAMES` does not hold one name per
    ///   descriptor; `LoopError.Code.badDescriptor` when a descriptor the variables promise is not open.
    public static func adopt(environment: [String: String]? = nil) throws(LoopError) -> SystemdSocketActivation {
        let names = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]
        let values = names.map { name in environment.map { $0[name] } ?? ProcessEnvironment.value(name) }
        if environment == nil { names.forEach(ProcessEnvironment.unset) }
        let descriptors = try passedDescriptors(pid: values[0], count: values[1], names: values[2])
        return SystemdSocketActivation(descriptors: descriptors)
    }

    /// The descriptors the three variables' values describe, checked open and marked close-on-exec.
    private static func passedDescriptors(
        pid: String?, count: String?, names: String?
    ) throws(LoopError) -> [Descriptor] {
        guard let pid, !pid.isEmpty else { return [] }
        guard let processID = pid_t(pid), processID > 0 else {
            throw LoopError(.invalidArgument, message: "LISTEN_PID \"\(pid)\" is not a process id")
        }
        guard processID == getpid(), let count, !count.isEmpty else { return [] }
        // Descriptors are ints from 3 on: more than that many cannot have been passed.
        guard let number = Int(count), number >= 0, number <= Int(CInt.max - firstDescriptor) else {
            throw LoopError(.invalidArgument, message: "LISTEN_FDS \"\(count)\" is not a number of descriptors")
        }
        let labels: [String]
        if let names {
            labels = names.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard labels.count == number || (number == 0 && names.isEmpty) else {
                throw LoopError(
                    .invalidArgument,
                    message: "LISTEN_FDNAMES \"\(names)\" holds \(labels.count) names for \(number) descriptors")
            }
        } else {
            labels = Array(repeating: unnamed, count: number)
        }
        let passed = (0..<number).map { Descriptor(descriptor: firstDescriptor + CInt($0), name: labels[$0]) }
        // All checked before any is changed: an error adopts nothing.
        if let closed = passed.first(where: { !FileDescriptorCalls.isOpen($0.descriptor) }) {
            throw LoopError(
                .badDescriptor, errno: EBADF,
                message: "LISTEN_FDS promises \(number) descriptors from 3 on, but \(closed.descriptor) is not open")
        }
        for entry in passed {
            do {
                try FileDescriptorCalls.setCloseOnExec(entry.descriptor)
            } catch {
                throw LoopError(error, context: "marking passed descriptor \(entry.descriptor) close-on-exec")
            }
        }
        return passed
    }
}
