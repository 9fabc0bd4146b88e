import CRunLoopShims
import Glibc

/// Unix-domain stream sockets connected to a path: how a process reaches a local service that talks back (a
/// memory-pressure notifier named by `MEMORY_PRESSURE_WATCH`).
package enum StreamSocket {
    /// A new Unix stream socket, non-blocking and close-on-exec, connected to the socket file at `path`.
    /// A connection the listener cannot take at once (its backlog is full) fails with `EAGAIN`; `path` holds at
    /// most ``UnixSocketAddress/maximumLength`` bytes (checked by the caller, else `ENAMETOOLONG`).
    ///
    /// The corresponding C calls are `socket(2)` with `AF_UNIX`, `SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC`, then
    /// `connect(2)`.
    package static func connect(to path: String) throws(SystemError) -> CInt {
        let name = Array(path.utf8)
        guard name.count <= UnixSocketAddress.maximumLength, !name.isEmpty, !name.contains(0) else {
            throw SystemError(call: "connect", errno: ENAMETOOLONG)
        }
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let descriptor = opened(try retryingOnInterrupt("socket") { socket(AF_UNIX, kind, 0) }, by: "socket")
        var (address, length) = UnixSocketAddress.make(name)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                Result { () throws(SystemError) in
                    try retryingOnInterrupt("connect", on: descriptor) { Glibc.connect(descriptor, target, length) }
                }
            }
        }
        do throws(SystemError) {
            _ = try connected.get()
        } catch {
            FileDescriptorCalls.close(descriptor)
            throw error
        }
        return descriptor
    }
}
