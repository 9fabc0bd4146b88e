import Glibc

/// A plain TCP client for the echo server, on a non-blocking socket with `poll()` waits of at most 10 s each.
/// One thread only.
final class EchoClient {
    private let descriptor: CInt
    private var buffered: [UInt8] = []

    /// Connects to 127.0.0.1:`port`; `nil` on failure. The receive buffer is kept small (32 KB), so a client that
    /// does not read fills up quickly, as a slow one on a real network would.
    init?(port: UInt16) {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var receiveBuffer: CInt = 32 * 1024
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<CInt>.size))
        // Small requests go out at once: Nagle's algorithm would hold one back until the previous one is acknowledged.
        var noDelay: CInt = 1
        _ = setsockopt(descriptor, CInt(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<CInt>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    }

    /// Sends all of `bytes`, waiting for room as needed.
    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 { offset += written } else if !wait(for: Int16(POLLOUT)) { return }
        }
    }

    /// Sends as much of `bytes` as fits now, waiting at most 10 ms for room; answers how many bytes went.
    func sendSome(_ bytes: [UInt8]) -> Int {
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if written > 0 { return written }
        _ = wait(for: Int16(POLLOUT), milliseconds: 10)
        return 0
    }

    /// Reads one line (without its newline); `nil` if the server closed or nothing came within 10 s.
    func receiveLine() -> String? {
        while true {
            if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<end], as: UTF8.self)
                buffered.removeSubrange(...end)
                return line
            }
            guard fill() > 0 else { return nil }
        }
    }

    /// Reads and discards until `count` bytes came in all; answers how many did (fewer if the server stopped).
    func receive(atLeast count: Int) -> Int {
        var received = buffered.count
        buffered.removeAll()
        while received < count {
            let more = fill()
            guard more > 0 else { break }
            received += more
            buffered.removeAll()
        }
        return received
    }

    func close() {
        Glibc.close(descriptor)
    }

    /// Appends what can be read now (waiting up to 10 s for something); answers how many bytes came.
    private func fill() -> Int {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count > 0 {
                buffered.append(contentsOf: chunk[0..<count])
                return count
            }
            if count == 0 || !wait(for: Int16(POLLIN)) { return 0 }
        }
    }

    private func wait(for events: Int16, milliseconds: CInt = 10_000) -> Bool {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        return poll(&entry, 1, milliseconds) > 0
    }
}
