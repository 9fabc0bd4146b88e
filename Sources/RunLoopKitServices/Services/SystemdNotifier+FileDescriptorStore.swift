import Glibc
import RunLoopKit
import RunLoopKitSystem

/// The service manager's file descriptor store and start-up and stop time: descriptors handed to systemd keep their
/// open files (a listening socket, a connection, a memfd of state) across a restart of the service, and come back
/// through socket activation's variables (see ``SystemdSocketActivation``) under the name they were stored with.
///
/// The unit needs `FileDescriptorStoreMax=` above zero, or systemd drops what is sent (silently, as far as the
/// service can tell: the datagram itself is delivered).
extension SystemdNotifier {
    /// The longest descriptor name systemd accepts.
    public static let maximumDescriptorNameLength = 255

    /// `FDSTORE=1` with `FDNAME=name`: hands duplicates of `descriptors` to the service manager to keep; the service
    /// still owns (and closes) its own. On the next start they are passed back like socket-activated descriptors,
    /// named `name`. Answers `false` and sends nothing when no service manager listens. Any thread.
    /// - Parameters:
    ///   - descriptors: 1 to 253 open descriptors (the most one message carries).
    ///   - name: What ``SystemdSocketActivation`` will call them: 1 to 255 printable ASCII characters (spaces
    ///     included), no `:`.
    ///   - pollForHangUp: Whether systemd drops a stored descriptor once it reports `EPOLLHUP` or `EPOLLERR`
    ///     (`FDPOLL=0` when `false`, for a descriptor that is always in such a state). Default `true`.
    /// - Throws: `LoopError.Code.invalidArgument` for no descriptors, more than 253, or a bad name;
    ///   `LoopError.Code.badDescriptor` when one of them is not open (`EBADF`); otherwise what ``notify(_:)`` throws.
    @discardableResult
    public func storeDescriptors(
        _ descriptors: [CInt], name: String, pollForHangUp: Bool = true
    ) throws(LoopError) -> Bool {
        guard (1...DatagramSocket.maximumPassedDescriptors).contains(descriptors.count) else {
            throw LoopError(
                .invalidArgument,
                message: "the fd store takes 1 to \(DatagramSocket.maximumPassedDescriptors) descriptors per "
                    + "message, not \(descriptors.count)")
        }
        try Self.checkDescriptorName(name)
        return try send(["FDSTORE=1", "FDNAME=\(name)"] + (pollForHangUp ? [] : ["FDPOLL=0"]), passing: descriptors)
    }

    /// `FDSTOREREMOVE=1` with `FDNAME=name`: the service manager closes every descriptor it keeps under `name`.
    /// Answers `false` and sends nothing when no service manager listens. Any thread.
    /// - Throws: `LoopError.Code.invalidArgument` for a bad name (see ``storeDescriptors(_:name:pollForHangUp:)``);
    ///   otherwise what ``notify(_:)`` throws.
    @discardableResult
    public func removeStoredDescriptors(named name: String) throws(LoopError) -> Bool {
        try Self.checkDescriptorName(name)
        return try notify(["FDSTOREREMOVE=1", "FDNAME=\(name)"])
    }

    /// `EXTEND_TIMEOUT_USEC=…`: asks for `time` more before the service manager gives up on a start, stop or
    /// reload in progress (`TimeoutStartSec=`, `TimeoutStopSec=`); send it again before it runs out to extend
    /// further. Answers `false` and sends nothing when no service manager listens. Any thread.
    /// - Throws: `LoopError.Code.invalidArgument` when `time` is not above zero; otherwise what ``notify(_:)``
    ///   throws.
    @discardableResult
    public func extendTimeout(by time: Duration) throws(LoopError) -> Bool {
        let (seconds, attoseconds) = time.components
        guard time > .zero, seconds < Int64.max / 1_000_000 - 1 else {
            throw LoopError(.invalidArgument, message: "a timeout extension must be above zero, not \(time)")
        }
        // Rounded up: a request for 1 ns more must not become "0 µs more".
        let microseconds = seconds * 1_000_000 + (attoseconds + 999_999_999_999) / 1_000_000_000_000
        return try notify(["EXTEND_TIMEOUT_USEC=\(microseconds)"])
    }

    /// Checks a name for the fd store the way systemd does: 1 to 255 printable ASCII characters other than `:`
    /// (the separator of `LISTEN_FDNAMES`).
    static func checkDescriptorName(_ name: String) throws(LoopError) {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumDescriptorNameLength,
            bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ":") })
        else {
            throw LoopError(
                .invalidArgument,
                message: "\"\(name)\" is not a descriptor name: 1 to \(maximumDescriptorNameLength) printable ASCII "
                    + "characters other than ':'")
        }
    }
}
