import Glibc
import Synchronization

/// A stand-in for systemd's notify socket: a Unix datagram socket bound to a fresh path or abstract name.
/// Unchecked `Sendable`: the descriptor is read by one thread at a time.
package final class NotifySocketStandIn: @unchecked Sendable {
    private static let serial = Atomic<Int>(0)
    package let descriptor: CInt
    /// What `NOTIFY_SOCKET` should say: `/tmp/…` or `@…`.
    package let address: String

    package init(abstract: Bool = false) {
        let name = "runloopkit-notify-\(getpid())-\(Self.serial.add(1, ordering: .relaxed).newValue)"
        address = abstract ? "@\(name)" : "/tmp/\(name).sock"
        if !abstract { unlink(address) }
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(descriptor >= 0)
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        precondition(bound == 0, "bind: errno \(errno)")
    }

    /// The next datagram, or `nil` when none came within `timeout`.
    package func receive(timeout: Duration = .seconds(10)) -> String? {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&entry, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count >= 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    package func close() {
        Glibc.close(descriptor)
        if !address.hasPrefix("@") { unlink(address) }
    }
}
