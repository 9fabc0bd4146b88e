import Glibc

/// Runs a system call that reports failure as -1 with `errno`, retrying on `EINTR` and nothing else.
///
/// `errno` is read immediately after the call, before anything can disturb it. Never use this for
/// `close(2)`: a `close` interrupted by a signal has already released the descriptor.
@inline(__always)
func retryingOnInterrupt<Result: FixedWidthInteger>(
    _ call: StaticString,
    _ body: () -> Result
) throws(SystemError) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemError(call: call, errno: code)
    }
}
