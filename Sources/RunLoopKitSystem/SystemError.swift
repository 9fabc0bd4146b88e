import Glibc

/// A failed system call: the call's name and the `errno` it left.
///
/// The syscall layer throws only this; the loop core turns it into the public ``LoopError``.
package struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C name of the call that failed, e.g. `"epoll_ctl"`.
    package let call: StaticString
    /// The `errno` value the call left.
    package let errno: CInt

    /// A failure of `call` with `errno`.
    package init(call: StaticString, errno: CInt) {
        self.call = call
        self.errno = errno
    }

    package static func == (lhs: SystemError, rhs: SystemError) -> Bool {
        lhs.errno == rhs.errno && lhs.call.description == rhs.call.description
    }

    package var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
