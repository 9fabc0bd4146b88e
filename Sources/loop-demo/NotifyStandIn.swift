import Glibc
import RunLoopKit

/// A stand-in for systemd's notify socket, for running the daemon scenario outside systemd: a Unix datagram socket
/// bound to a fresh path under /tmp, read by a descriptor source on a `LoopThread` of its own, as systemd would read
/// it. Every message is kept; keep-alives (`WATCHDOG=1`) are counted rather than printed.
///
/// Threading: create and ``close()`` it from any one thread; ``messages`` and ``keepAlives`` from any thread.
final class NotifyStandIn: Sendable {
    /// The socket's path: what `NOTIFY_SOCKET` would name.
    let path: String
    private let directory: String
    private let descriptor: CInt
    private let thread: LoopThread
    private let received = Box<(messages: [String], keepAlives: Int)>(([], 0))

    /// Binds the socket and starts reading it.
    init() throws {
        var template = Array("/tmp/loop-demo-notify-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw EchoError("mkdtemp", errno) }
        directory = String(cString: made)
        let path = directory + "/notify"
        self.path = path
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw EchoError("socket", errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw EchoError("bind", errno) }
        self.descriptor = descriptor
        thread = try LoopThread(name: "systemd")
        let received = self.received
        let reader = try FileDescriptorSource(descriptor: descriptor) { _, _ in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                guard count > 0 else { return }
                let message = String(decoding: buffer[..<count], as: UTF8.self)
                received.update { received in
                    if message == "WATCHDOG=1" {
                        received.keepAlives += 1
                    } else {
                        received.messages.append(message.split(separator: "\n").joined(separator: " "))
                    }
                }
            }
        }
        _ = try thread.performAndWait { try Loop.current.add(reader) }
    }

    /// The messages other than keep-alives, oldest first, each on one line.
    var messages: [String] { received.value.messages }

    /// How many `WATCHDOG=1` keep-alives arrived.
    var keepAlives: Int { received.value.keepAlives }

    /// Stops reading, closes the socket and removes its path.
    func close() {
        thread.stop()
        Glibc.close(descriptor)
        unlink(path)
        rmdir(directory)
    }
}
