// The two libdispatch entry points a run loop uses to serve the main dispatch queue on the main thread.
//
// libdispatch exports them for CoreFoundation's run loop (swift-corelibs-foundation's CFRunLoop.c calls them on
// Linux) but declares them in no public header, so they are declared here, once. RunLoopKit calls them only from
// Sources/RunLoopKit/System/DispatchMainQueue.swift.
#ifndef C_RUNLOOP_SHIMS_DISPATCH_MAIN_QUEUE_HOOKS_H
#define C_RUNLOOP_SHIMS_DISPATCH_MAIN_QUEUE_HOOKS_H

/// The main queue's wake-up handle: on Linux a non-blocking, close-on-exec eventfd that libdispatch creates on the
/// first call and writes to whenever the main queue goes from empty to having work. It belongs to libdispatch:
/// never close it.
extern int _dispatch_get_main_queue_handle_4CF(void);

/// Runs the work queued on the main queue so far (a snapshot), on the calling thread, which must be the main
/// thread. Returns at once when called again from inside a drain. The argument is unused on Linux.
extern void _dispatch_main_queue_callback_4CF(void *_Nullable message);

#endif
