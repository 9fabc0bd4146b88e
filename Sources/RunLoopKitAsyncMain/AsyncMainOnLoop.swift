// Tracks a Swift runtime interface that is not public API: see Sources/CRunLoopKitAsyncMain/AsyncMainDrainHook.c.
import CRunLoopKitAsyncMain
import RunLoopKit
import RunLoopKitSystem

/// Serves an `async` entry point's main actor from `Loop.main` on the real main thread.
///
/// Depend on the `RunLoopKitAsyncMain` product in an executable target whose entry point is `async`
/// (`@main struct App { static func main() async { … } }`, or top-level `await` in `main.swift`). Nothing else is
/// needed: before `main()` runs, the product installs the Swift runtime's async-main drain hook, so once the async
/// main first suspends, the main thread runs `Loop.main` (in its default mode, serving Dispatch's main queue)
/// instead of `dispatch_main()`. Every `await` in the async main then resumes on the main thread inside the loop's
/// passes, next to the loop's sources, timers and observers. The program ends when the async main returns (status
/// 0), calls `exit(_:)`, or throws (a fatal error, as without the loop).
///
/// - `Loop.main.stop()` ends the current run only: the main thread goes on serving the async main.
/// - Turning `Loop.servesMainQueue` off would leave the async main unable to resume: that traps.
/// - Never call `dispatchMain()` in such a program.
///
/// This relies on a runtime hook that is not public API (checked on Swift 6.3.1, and by the test suite on every
/// run). A synchronous `main.swift` that starts `Task { @MainActor in … }` and calls `Loop.main.run()` needs no
/// hook at all.
public enum AsyncMainOnLoop {
    /// Whether the hook is installed (false when another library installed its own first, which is left alone).
    /// Safe from any thread.
    public static var isInstalled: Bool { runloopkit_async_main_is_installed() != 0 }

    /// Whether an async main has handed the main thread to `Loop.main`. Safe from any thread.
    public static var hasTakenMainThread: Bool { runloopkit_async_main_took_main_thread() != 0 }
}

/// The hook's body, on the main thread: runs the main loop until the process exits.
@_cdecl("runloopkit_async_main_run_loop")
func runMainLoopForAsyncMain() -> Never {
    let loop = Loop.main
    while true {
        require(
            loop.servesMainQueue,
            "RunLoopKitAsyncMain: Loop.main.servesMainQueue was turned off, so the async main could never resume")
        loop.run()  // Returns when stopped: the async main still needs the main thread, so serve on.
    }
}
