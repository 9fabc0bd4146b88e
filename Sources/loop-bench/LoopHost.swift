import RunLoopKit
import RunLoopKitSystem

/// A thread that runs its own loop in the default mode until shut down: the W1 to W5 loop threads.
///
/// A source that is never signalled keeps the mode from being empty (CF's keep-alive port), so the loop sleeps in
/// `epoll_wait` when idle instead of returning. The loop exists when ``init()`` returns; work is handed to it with
/// `loop.perform`.
///
/// Threading: ``loop`` may be used from any thread as `Loop` allows; ``shutDown()`` from the creating thread, once.
final class LoopHost: Sendable {
    /// The hosted thread's loop.
    let loop: Loop
    private let thread: JoinableThread

    private final class Startup: @unchecked Sendable {  // Unchecked: `loop` is published through `ready`.
        var loop: Loop?
        let ready = WaitCounter()
    }

    /// Starts the thread and returns once its loop runs or is about to.
    init() {
        let startup = Startup()
        thread = JoinableThread {
            let loop = Loop.current
            let keepAlive = LoopSource(perform: { _ in })
            try! loop.add(keepAlive)
            startup.loop = loop
            startup.ready.increment()
            while loop.run(in: .default, for: .seconds(3600)) != .stopped {}
            keepAlive.invalidate()
        }
        startup.ready.wait()
        loop = startup.loop!
    }

    /// Stops the loop (through a block, so a stop sent before the loop runs is not lost) and joins the thread.
    func shutDown() {
        let loop = self.loop
        loop.perform { loop.stop() }
        thread.join()
    }
}
