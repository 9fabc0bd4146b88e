import Glibc

/// The `sockaddr_un` of a Unix-domain socket name, for the datagram and stream sockets.
package enum UnixSocketAddress {
    /// The longest name `sockaddr_un` holds, without the terminating NUL of a path name.
    package static let maximumLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// `name` as a `sockaddr_un` and its length: a path, or an abstract name whose bytes start with NUL. An abstract
    /// name's length is exact (no terminating NUL), a path's includes its NUL. `name` holds at most
    /// ``maximumLength`` bytes (checked by the caller).
    package static func make(_ name: [UInt8]) -> (sockaddr_un, socklen_t) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: name.prefix(path.count))
        }
        let length = name.first == 0 ? name.count : name.count + 1
        return (address, socklen_t(MemoryLayout<sa_family_t>.size + length))
    }
}
