import CRunLoopShims
import Glibc

/// Who the calling thread is, in the two ways the loop needs.
enum ThreadIdentity {
    /// The kernel thread id of the calling thread.
    ///
    /// The corresponding C call is `gettid(2)`.
    static func currentThreadID() -> pid_t {
        crunloop_gettid()
    }

    /// Answers whether the calling thread is the process's main thread (its thread id is the process id).
    static var isMainThread: Bool {
        crunloop_gettid() == getpid()
    }
}
