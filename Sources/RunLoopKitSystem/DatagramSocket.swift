import CRunLoopShims
import Glibc

/// Unix-domain datagram sockets, for the systemd notify protocol: a socket made, one datagram sent to a named
/// address (with descriptors attached, for the fd store), closed. The only socket calls the library makes.
package enum DatagramSocket {
    /// The most descriptors one datagram may carry (the kernel's `SCM_MAX_FD`).
    package static let maximumPassedDescriptors = 253

    /// A new unbound Unix datagram socket, close-on-exec.
    ///
    /// The corresponding C call is `socket(2)` with `AF_UNIX`, `SOCK_DGRAM | SOCK_CLOEXEC`.
    package static func make() throws(SystemError) -> CInt {
        let kind = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        return opened(try retryingOnInterrupt("socket") { socket(AF_UNIX, kind, 0) }, by: "socket")
    }

    /// Sends `message` as one datagram from `descriptor` to `address`: a path, or an abstract name whose bytes
    /// start with NUL. `address` holds at most ``UnixSocketAddress/maximumLength`` bytes (checked by the caller).
    ///
    /// The corresponding C call is `sendto(2)` with `MSG_NOSIGNAL`.
    package static func send(_ message: [UInt8], from descriptor: CInt, to address: [UInt8]) throws(SystemError) {
        var (socketAddress, length) = UnixSocketAddress.make(address)
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

    /// Sends `message` as one datagram from `descriptor` to `address` (as for ``send(_:from:to:)``) with `passed`
    /// attached as `SCM_RIGHTS`: the receiver gets its own duplicates of them. `passed` holds 1 to
    /// ``maximumPassedDescriptors`` descriptors (checked by the caller).
    ///
    /// The corresponding C call is `sendmsg(2)` with `MSG_NOSIGNAL`.
    package static func send(
        _ message: [UInt8], passing passed: [CInt], from descriptor: CInt, to address: [UInt8]
    ) throws(SystemError) {
        var (socketAddress, length) = UnixSocketAddress.make(address)
        var payload = message
        var control = [UInt8](repeating: 0, count: crunloop_rights_space(CInt(passed.count)))
        let sent = withUnsafeMutablePointer(to: &socketAddress) { target in
            payload.withUnsafeMutableBytes { bytes in
                control.withUnsafeMutableBytes { controlBytes in
                    passed.withUnsafeBufferPointer { descriptors in
                        var vector = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                            var header = msghdr()
                            header.msg_name = UnsafeMutableRawPointer(target)
                            header.msg_namelen = length
                            header.msg_iov = vectorPointer
                            header.msg_iovlen = 1
                            header.msg_control = controlBytes.baseAddress
                            header.msg_controllen = controlBytes.count
                            crunloop_fill_rights(&header, descriptors.baseAddress, CInt(descriptors.count))
                            return Result { () throws(SystemError) in
                                try retryingOnInterrupt("sendmsg", on: descriptor) {
                                    sendmsg(descriptor, &header, Int32(MSG_NOSIGNAL))
                                }
                            }
                        }
                    }
                }
            }
        }
        _ = try sent.get()
    }
}
