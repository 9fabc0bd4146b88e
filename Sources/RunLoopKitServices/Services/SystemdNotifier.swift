import Glibc
import RunLoopKit
import RunLoopKitSystem

/// Tells the service manager what state the service is in, with systemd's notify protocol (what `sd_notify(3)`
/// sends), spoken directly: one datagram to the Unix socket named by `NOTIFY_SOCKET`, no libsystemd.
///
/// Under a unit with `Type=notify` (or `notify-reload`) systemd sets `NOTIFY_SOCKET` and waits for `READY=1`; with
/// `WatchdogSec=` it also expects `WATCHDOG=1` regularly (see ``SystemdWatchdog``). Outside systemd the variable is
/// absent and every call does nothing and answers `false`, so a daemon calls these unconditionally.
///
/// Threading: a value type with no state of its own beyond the address; every call is safe from any thread (each
/// sends one datagram from a socket of its own, closed before the call returns).
public struct SystemdNotifier: Sendable {
    /// The service manager's socket as `NOTIFY_SOCKET` named it (`/path`, or `@name` for an abstract socket), or
    /// `nil` when the variable is absent or empty.
    public let socketAddress: String?

    /// A notifier for the socket `environment["NOTIFY_SOCKET"]` names; `nil` (the default) reads the process's
    /// environment. Pass a dictionary to aim at a stand-in socket, as tests do.
    public init(environment: [String: String]? = nil) {
        let address = environment.map { $0["NOTIFY_SOCKET"] } ?? ProcessEnvironment.value("NOTIFY_SOCKET")
        socketAddress = address.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether a service manager listens: `NOTIFY_SOCKET` is set.
    public var isEnabled: Bool { socketAddress != nil }

    /// Sends `assignments` (`"READY=1"`, `"STATUS=Serving 3 clients"`, …) as one message, one per line. Answers
    /// `false` and sends nothing when no service manager listens. Any thread.
    /// - Throws: `LoopError.Code.invalidArgument` when `assignments` is empty, one of them is not `NAME=value` or
    ///   holds a line break or a NUL, or `NOTIFY_SOCKET` names neither a path (without NUL) nor an abstract socket
    ///   (`@` and a name; vsock addresses are not supported) or is too long for a Unix socket address;
    ///   `LoopError.Code.systemCallFailed` with the `errno`, whatever it is (`EPERM` included), when the socket
    ///   cannot be made or the datagram cannot be sent (`ENOENT` or `ECONNREFUSED`: nothing listens there any more).
    @discardableResult
    public func notify(_ assignments: [String]) throws(LoopError) -> Bool {
        try send(assignments, passing: [])
    }

    /// Sends `assignments` (checked as ``notify(_:)`` checks them), with `passed` attached when it is not empty.
    func send(_ assignments: [String], passing passed: [CInt]) throws(LoopError) -> Bool {
        guard let socketAddress else { return false }
        let (address, message) = try Self.datagram(assignments, to: socketAddress)
        do throws(SystemError) {
            let descriptor = try DatagramSocket.make()
            defer { FileDescriptorCalls.close(descriptor) }
            if passed.isEmpty {
                try DatagramSocket.send(message, from: descriptor, to: address)
            } else {
                try DatagramSocket.send(message, passing: passed, from: descriptor, to: address)
            }
        } catch let error where error.errno == EBADF && !passed.isEmpty {
            // The socket is our own, just made: a descriptor to pass is not open.
            throw LoopError(
                .badDescriptor, errno: EBADF,
                message: "passing descriptors \(passed) to the service manager at \(socketAddress): \(error)")
        } catch {
            throw LoopError(systemCall: error, context: "notifying the service manager at \(socketAddress)")
        }
        return true
    }

    /// `READY=1`: start-up is finished (systemd then starts the units ordered after this one). Any thread.
    @discardableResult
    public func ready(status: String? = nil) throws(LoopError) -> Bool {
        try notify(["READY=1"] + Self.status(status))
    }

    /// `RELOADING=1` with `MONOTONIC_USEC` (which `Type=notify-reload` requires): the service reloads its
    /// configuration; send ``ready(status:)`` when done. Any thread.
    @discardableResult
    public func reloading(status: String? = nil) throws(LoopError) -> Bool {
        let microseconds = MonotonicClock.now() / 1_000
        return try notify(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)"] + Self.status(status))
    }

    /// `STOPPING=1`: the service is shutting down. Any thread.
    @discardableResult
    public func stopping(status: String? = nil) throws(LoopError) -> Bool {
        try notify(["STOPPING=1"] + Self.status(status))
    }

    /// `STATUS=…`: a one-line state shown by `systemctl status`. Any thread.
    @discardableResult
    public func status(_ text: String) throws(LoopError) -> Bool {
        try notify(Self.status(text))
    }

    /// `WATCHDOG=1`: one watchdog keep-alive. ``SystemdWatchdog`` sends these from a loop's passes. Any thread.
    @discardableResult
    public func watchdogKeepAlive() throws(LoopError) -> Bool {
        try notify(["WATCHDOG=1"])
    }

    /// `MAINPID=…`: the service's main process is `pid` (a daemon that forks, or a supervisor). Any thread.
    @discardableResult
    public func mainProcess(_ pid: pid_t) throws(LoopError) -> Bool {
        try notify(["MAINPID=\(pid)"])
    }

    private static func status(_ text: String?) -> [String] {
        text.map { ["STATUS=\($0)"] } ?? []
    }

    /// What is sent for `assignments` to the socket `address` (a `NOTIFY_SOCKET` value): the bytes of its
    /// `sun_path`, and the message. Checks the text only; no system call.
    /// - Throws: `LoopError.Code.invalidArgument` as ``notify(_:)`` says.
    package static func datagram(
        _ assignments: [String], to address: String
    ) throws(LoopError) -> (address: [UInt8], message: [UInt8]) {
        guard !assignments.isEmpty else {
            throw LoopError(.invalidArgument, message: "a notification needs at least one NAME=value assignment")
        }
        for assignment in assignments {
            // A NUL would end the whole message where systemd reads it: the lines after it would be lost.
            guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex,
                !assignment.contains(where: { $0.isNewline || $0 == "\0" })
            else {
                throw LoopError(
                    .invalidArgument, message: "\"\(assignment)\" is not one NAME=value line of the notify protocol")
            }
        }
        return (try socketAddressBytes(address), Array(assignments.joined(separator: "\n").utf8))
    }

    /// The bytes of `sun_path` for `address`: a path as is, `@name` as NUL followed by the name. A path may hold no
    /// NUL (the kernel would end it there, at another socket), and an abstract name may not be empty.
    private static func socketAddressBytes(_ address: String) throws(LoopError) -> [UInt8] {
        var bytes = Array(address.utf8)
        switch bytes.first {
        case UInt8(ascii: "/") where !bytes.contains(0): break
        case UInt8(ascii: "@") where bytes.count > 1: bytes[0] = 0
        default:
            throw LoopError(
                .invalidArgument,
                message:
                    "NOTIFY_SOCKET \"\(address)\" names neither a path (without NUL) nor an abstract socket (@name)")
        }
        guard bytes.count <= UnixSocketAddress.maximumLength else {
            throw LoopError(
                .invalidArgument,
                message: "NOTIFY_SOCKET \"\(address)\" is longer than a Unix socket address "
                    + "(\(UnixSocketAddress.maximumLength) bytes)")
        }
        return bytes
    }
}
