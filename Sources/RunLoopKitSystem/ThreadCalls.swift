import CRunLoopShims
import Glibc

/// The thread calls `LoopThread` makes, each wrapped once.
package enum ThreadCalls {
    /// Starts a joinable thread running `body(argument)`.
    ///
    /// `pthread_create(3)` answers its error instead of setting `errno` (`EAGAIN`: out of threads or memory for a
    /// stack; `EPERM`, `EINVAL`: bad attributes), and is never interrupted. The corresponding C call is
    /// `pthread_create(3)`.
    package static func start(
        _ body: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?,
        with argument: UnsafeMutableRawPointer
    ) throws(SystemError) -> pthread_t {
        #if RUNLOOPKIT_FAULT_INJECTION
        if let injected = FaultInjection.injectedErrno("pthread_create") {
            throw SystemError(call: "pthread_create", errno: injected)
        }
        #endif
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, body, argument)
        guard status == 0 else { throw SystemError(call: "pthread_create", errno: status) }
        return thread
    }

    /// Names the calling thread, as `top -H`, `ps -L` and debuggers show it; the kernel keeps the first 15 bytes.
    ///
    /// The corresponding C call is `prctl(2)` with `PR_SET_NAME` (what `pthread_setname_np(3)` does for the
    /// calling thread).
    package static func setCurrentName(_ name: String) throws(SystemError) {
        _ = try retryingOnInterrupt("prctl(PR_SET_NAME)") { crunloop_set_thread_name(name) }
    }
}
