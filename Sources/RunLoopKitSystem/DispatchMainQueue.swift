import CRunLoopShims
import Dispatch  // Links libdispatch, which exports the two hooks CRunLoopShims declares.

/// libdispatch's main-queue hooks for run loops (the ones CF's run loop uses on Linux), each wrapped once.
///
/// Declared in `Sources/CRunLoopShims/include/DispatchMainQueueHooks.h`. Only the main loop calls them, on the
/// main thread.
package enum DispatchMainQueue {
    /// The main queue's wake-up eventfd: readable while the main queue has work. Created by libdispatch on the
    /// first call (non-blocking, close-on-exec); it belongs to libdispatch and is never closed here.
    ///
    /// The corresponding C call is `_dispatch_get_main_queue_handle_4CF()`.
    package static func wakeUpDescriptor() -> CInt {
        _dispatch_get_main_queue_handle_4CF()
    }

    /// Runs the main queue's work queued so far on the calling thread, which must be the main thread. Work queued
    /// during the drain waits for the next one (libdispatch writes the eventfd again for it).
    ///
    /// The corresponding C call is `_dispatch_main_queue_callback_4CF(NULL)`.
    package static func drain() {
        _dispatch_main_queue_callback_4CF(nil)
    }
}
