import Glibc
import RunLoopKit
import Synchronization

/// Helpers every folder's tests use: loop threads that run until finished or run once and exit, short runs until a
/// condition holds, a far keep-alive timer, a flag, and descriptor numbers no parallel test touches.
package enum ItemsSupport {
    /// Generous slack for scheduling delays on a loaded two-core machine.
    package static let slack: Duration = .milliseconds(400)

    /// A flag one thread sets and others read.
    package final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        package init() {}
        package func set() { value.store(true, ordering: .sequentiallyConsistent) }
        package var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    }

    /// A timer an hour away: keeps a mode from being empty (a run of an empty mode returns at once).
    package static func keepAlive() -> LoopTimer {
        try! LoopTimer(after: .seconds(3600)) { _ in }
    }

    /// Runs the calling thread's `loop` in `mode`, in short runs, until `condition` holds or `timeout` passes.
    ///
    /// - Returns: Whether the condition held.
    @discardableResult
    package static func run(
        _ loop: Loop,
        in mode: Loop.Mode = .default,
        timeout: Duration = .seconds(10),
        until condition: () -> Bool
    ) -> Bool {
        let deadline = Loop.Instant.now + timeout
        while !condition() {
            guard Loop.Instant.now < deadline else { return false }
            loop.run(in: mode, for: .milliseconds(20))
        }
        return true
    }

    /// A loop thread running its default mode in long runs until ``finish()``.
    package final class RunningLoop: Sendable {
        /// The thread's loop.
        package let loop: Loop
        package let thread: TestThread
        package let stopper: LoopSource
        package let done: Flag

        package init(loop: Loop, thread: TestThread, stopper: LoopSource, done: Flag) {
            self.loop = loop
            self.thread = thread
            self.stopper = stopper
            self.done = done
        }

        /// Stops the loop (through a source, so a stop between two runs is not lost) and joins the thread.
        package func finish() {
            done.set()
            stopper.signal()
            thread.join()
        }
    }

    /// Starts a thread whose loop runs its default mode (kept alive by a far timer) in long runs, sleeping for
    /// real, until ``RunningLoop/finish()`` or `timeout`; `setUp` runs on that thread first.
    package static func startRunningLoop(
        timeout: Duration = .seconds(20),
        setUp: @escaping @Sendable (Loop) -> Void = { _ in }
    ) -> RunningLoop {
        let done = Flag()
        let stopper = LoopSource { _ in Loop.current.stop() }
        let ready = Flag()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(keepAlive())
            try! loop.add(stopper)
            setUp(loop)
            ready.set()
            let deadline = Loop.Instant.now + timeout
            while !done.isSet && Loop.Instant.now < deadline {
                loop.run(in: .default, for: deadline - Loop.Instant.now)
            }
        }
        _ = waitUntil { ready.isSet }
        return RunningLoop(loop: loop, thread: thread, stopper: stopper, done: done)
    }

    /// Runs `body` on a fresh thread that owns its own loop, and waits for it to finish.
    package static func onLoopThread(_ body: @escaping @Sendable (Loop) -> Void) {
        let (_, thread) = startLoopThread(body)
        thread.join()
    }

    /// A descriptor floor of its own for each caller (`slot` 0-9): `F_DUPFD` above it gives a number that tests
    /// running in parallel (which take the lowest free numbers) and other slots never touch.
    package static func highDescriptorFloor(slot: Int) -> CInt {
        CInt(800 + 10 * slot)
    }

    /// A descriptor number that is not open and that nothing else will open meanwhile (see
    /// ``highDescriptorFloor(slot:)``); each caller uses its own `slot`.
    package static func closedDescriptorNumber(slot: Int) -> CInt {
        let pipe = Pipe()
        let high = fcntl(pipe.readEnd, F_DUPFD_CLOEXEC, highDescriptorFloor(slot: slot))
        pipe.close()
        Glibc.close(high)
        return high
    }
}
