import Glibc

/// Thin wrappers over the descriptor calls the loop needs beyond its own kernel objects.
enum FileDescriptorCalls {
    /// Closes `descriptor` once, never retrying: after `EINTR` the descriptor is already gone on Linux.
    ///
    /// The corresponding C call is `close(2)`.
    static func close(_ descriptor: CInt) {
        _ = Glibc.close(descriptor)
    }

    /// Answers whether `descriptor` names an open file description in this process.
    ///
    /// The corresponding C call is `fcntl(2)` with `F_GETFD`.
    static func isOpen(_ descriptor: CInt) -> Bool {
        descriptor >= 0 && fcntl(descriptor, F_GETFD) != -1
    }

    /// Which file `descriptor` names (device and inode), `nil` when it is not open: tells a descriptor apart from
    /// another file that got the same number after it was closed.
    ///
    /// The corresponding C call is `fstat(2)`.
    static func identity(of descriptor: CInt) -> FileIdentity? {
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else { return nil }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}

/// A file's device and inode numbers: the same for every descriptor of one open file, different for another file.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
}
