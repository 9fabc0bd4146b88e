import Glibc

/// Runs a system call that reports failure as -1 with `errno`, retrying on `EINTR` and nothing else.
///
/// `errno` is read immediately after the call, before anything can disturb it. Never use this for
/// `close(2)`: a `close` interrupted by a signal has already released the descriptor.
///
/// In debug builds the call first asks ``FaultInjection`` whether a test scripted it to fail (`descriptor` lets a
/// fault aim at one descriptor); release builds compile that check out.
@inline(__always)
package func retryingOnInterrupt<Result: FixedWidthInteger>(
    _ call: StaticString,
    on descriptor: CInt = -1,
    _ body: () -> Result
) throws(SystemError) -> Result {
    while true {
        #if RUNLOOPKIT_FAULT_INJECTION
        if let injected = FaultInjection.injectedErrno(call, on: descriptor) {
            if injected == EINTR { continue }
            throw SystemError(call: call, errno: injected)
        }
        #endif
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemError(call: call, errno: code)
    }
}

/// Records a descriptor a creating call returned, for ``FaultInjection``'s ledger of the library's open
/// descriptors (debug builds; nothing in release builds). Answers `descriptor`.
@inline(__always)
package func opened(_ descriptor: CInt, by call: StaticString) -> CInt {
    #if RUNLOOPKIT_FAULT_INJECTION
    FaultInjection.recordOpened(descriptor, by: call)
    #endif
    return descriptor
}
