import Glibc
import RunLoopKit

/// One client's connection: its socket, the source that watches it, and the start of a line not yet complete.
@MainActor final class Connection {
    let descriptor: CInt
    private let source: FileDescriptorSource
    private var pending: [UInt8] = []

    init(descriptor: CInt, source: FileDescriptorSource) {
        self.descriptor = descriptor
        self.source = source
    }

    /// Reads what has arrived and answers the complete lines in it, or `nil` when the client has hung up (or sent a
    /// line longer than 4 KiB: a client may not make the service hold unbounded input).
    func receiveLines() -> [String]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, CInt(MSG_DONTWAIT))  // Never waits: the loop does.
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return [] }
        guard count > 0 else { return nil }  // 0: end of input; below 0: an error such as ECONNRESET.
        pending += buffer[..<count]
        guard pending.count <= buffer.count || pending.contains(UInt8(ascii: "\n")) else { return nil }
        var lines: [String] = []
        while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: pending[..<end], as: UTF8.self))
            pending.removeSubrange(...end)
        }
        return lines
    }

    /// Sends `line` and a newline. A reply this small fits in the socket's empty send buffer; a service with long
    /// replies keeps what `send` did not take and watches for `.writable`.
    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = Glibc.send(descriptor, bytes, bytes.count, CInt(MSG_DONTWAIT | MSG_NOSIGNAL))  // No SIGPIPE if it left.
    }

    /// Stops watching the socket, then closes it (in that order: the loop must not watch a closed descriptor).
    func close() {
        source.invalidate()
        Glibc.close(descriptor)
    }
}
