// Lets an `async` entry point (`@main ... static func main() async`, or top-level `await` in main.swift) hand the
// real main thread to RunLoopKit's main loop instead of Dispatch's dispatch_main().
//
// THIS TRACKS A SWIFT RUNTIME INTERFACE THAT IS NOT PUBLIC API. An async main's generated main() runs the first
// part of the async main on the main thread, then calls swift_task_asyncMainDrainQueue(), which never returns. That
// function calls the runtime's exported `swift_task_asyncMainDrainQueue_hook` when it is set (a compatibility hook
// declared in the runtime's include/swift/Runtime/Concurrency.h and defined in stdlib/public/Concurrency/Task.cpp),
// and abort()s if the hook returns; unset, it runs the main executor, which on Linux is dispatch_main(). Checked on
// Swift 6.3.1 (Linux); Tests/RunLoopKitTests/Concurrency/AsyncMainTests.swift fails the day a toolchain changes it.
// The supported alternative that needs none of this: a synchronous main.swift that starts its work with
// `Task { @MainActor in ... }` and calls `Loop.main.run()` (Docs/Concurrency.md).
#include "CRunLoopKitAsyncMain.h"

// The runtime's types: both function pointers use the Swift calling convention. The runtime calls
// hook(swift_task_asyncMainDrainQueueImpl, NULL).
typedef __attribute__((swiftcall)) void (*runloopkit_drain_original)(void);
typedef __attribute__((swiftcall)) void (*runloopkit_drain_override)(runloopkit_drain_original original);
typedef __attribute__((swiftcall)) void (*runloopkit_drain_hook)(runloopkit_drain_original original,
                                                                 runloopkit_drain_override compatibility_override);

extern runloopkit_drain_hook swift_task_asyncMainDrainQueue_hook;

// Defined in Swift (Sources/RunLoopKitAsyncMain/AsyncMainOnLoop.swift): runs Loop.main until the process exits.
extern void runloopkit_async_main_run_loop(void) __attribute__((noreturn));

static volatile int took_main_thread;

static __attribute__((swiftcall)) void drain_on_main_loop(runloopkit_drain_original original,
                                                          runloopkit_drain_override compatibility_override) {
    (void)original;  // It would run dispatch_main(): exactly what this replaces.
    (void)compatibility_override;
    took_main_thread = 1;
    runloopkit_async_main_run_loop();
}

int runloopkit_async_main_install(void) {
    runloopkit_drain_hook installed = swift_task_asyncMainDrainQueue_hook;
    if (installed != 0 && installed != drain_on_main_loop) return 0;
    swift_task_asyncMainDrainQueue_hook = drain_on_main_loop;
    return 1;
}

int runloopkit_async_main_is_installed(void) { return swift_task_asyncMainDrainQueue_hook == drain_on_main_loop; }

int runloopkit_async_main_took_main_thread(void) { return took_main_thread; }

// Linking the RunLoopKitAsyncMain product is the opt-in: the hook is in place before main() runs. Synchronous
// mains never call the drain function, so for them this changes nothing.
__attribute__((constructor)) static void install_before_main(void) { (void)runloopkit_async_main_install(); }
