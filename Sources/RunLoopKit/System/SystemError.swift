import Glibc

/// A failed system call: the call's name and the `errno` it left.
///
/// The syscall layer throws only this; the loop core turns it into the public ``LoopError``.
struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C name of the call that failed, e.g. `"epoll_ctl"`.
    let call: StaticString
    /// The `errno` value the call left.
    let errno: CInt

    static func == (lhs: SystemError, rhs: SystemError) -> Bool {
        lhs.errno == rhs.errno && lhs.call.description == rhs.call.description
    }

    var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
