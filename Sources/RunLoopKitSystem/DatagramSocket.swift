import Glibc

/// Unix-domain datagram sockets, for the systemd notify protocol: a socket made, one datagram sent to a named
/// address, closed. The only socket calls the library makes.
package enum DatagramSocket {
    /// The longest address `sockaddr_un` holds, without the terminating NUL of a path name.
    package static let maximumAddressLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A new unbound Unix datagram socket, close-on-exec.
    ///
    /// The corresponding C call is `socket(2)` with `AF_UNIX`, `SOCK_DGRAM | SOCK_CLOEXEC`.
    package static func make() throws(SystemError) -> CInt {
        let kind = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        return opened(try retryingOnInterrupt("socket") { socket(AF_UNIX, kind, 0) }, by: "socket")
    }

    /// Sends `message` as one datagram from `descriptor` to `address`: a path, or an abstract name whose bytes
    /// start with NUL. `address` holds at most ``maximumAddressLength`` bytes (checked by the caller).
    ///
    /// The corresponding C call is `sendto(2)` with `MSG_NOSIGNAL`.
    package static func send(_ message: [UInt8], from descriptor: CInt, to address: [UInt8]) throws(SystemError) {
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { path in
            path.copyBytes(from: address.prefix(path.count))
        }
        // An abstract name's length is exact (no terminating NUL); a path's includes its NUL.
        let pathLength = address.first == 0 ? address.count : address.count + 1
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathLength)
        let sent = withUnsafePointer(to: &socketAddress) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                message.withUnsafeBytes { bytes in
                    Result { () throws(SystemError) in
                        try retryingOnInterrupt("sendto", on: descriptor) {
                            sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), target, length)
                        }
                    }
                }
            }
        }
        _ = try sent.get()
    }
}
