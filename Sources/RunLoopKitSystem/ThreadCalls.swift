import CRunLoopShims
import Glibc

/// The thread calls the package makes (`LoopThread`, ``JoinableThread``, graceful shutdown's drain), each wrapped once.
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
        try create(body, with: argument, attributes: nil)
    }

    /// `pthread_create(3)` with `attributes` (`nil`: the defaults), for ``start(_:with:)`` and
    /// ``start(_:with:attributes:)``.
    static func create(
        _ body: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?,
        with argument: UnsafeMutableRawPointer,
        attributes: UnsafePointer<pthread_attr_t>?
    ) throws(SystemError) -> pthread_t {
        #if RUNLOOPKIT_FAULT_INJECTION
        if let injected = FaultInjection.injectedErrno("pthread_create") {
            throw SystemError(call: "pthread_create", errno: injected)
        }
        #endif
        var thread = pthread_t()
        let status = pthread_create(&thread, attributes, body, argument)
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

    /// Waits for `thread` to end and releases it.
    ///
    /// `pthread_join(3)` answers its error instead of setting `errno` (`ESRCH`: no such thread; `EINVAL`: not
    /// joinable, or another thread is joining it; `EDEADLK`: the caller itself), and is never interrupted. The
    /// corresponding C call is `pthread_join(3)`.
    package static func join(_ thread: pthread_t) throws(SystemError) {
        let status = pthread_join(thread, nil)
        guard status == 0 else { throw SystemError(call: "pthread_join", errno: status) }
    }

    /// Lets `thread` release itself when it ends, so no one joins it.
    ///
    /// `pthread_detach(3)` answers its error instead of setting `errno` (`ESRCH`, `EINVAL`: not joinable), and is
    /// never interrupted. The corresponding C call is `pthread_detach(3)`.
    package static func detach(_ thread: pthread_t) throws(SystemError) {
        let status = pthread_detach(thread)
        guard status == 0 else { throw SystemError(call: "pthread_detach", errno: status) }
    }
}
