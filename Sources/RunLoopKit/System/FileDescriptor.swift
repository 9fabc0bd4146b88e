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
}
