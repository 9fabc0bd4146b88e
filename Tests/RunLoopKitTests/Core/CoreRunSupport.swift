import Glibc
import RunLoopKit
import Synchronization
import TestSupport

/// Helpers shared by the loop-core tests (running, modes, observers, blocks, registry).
enum CoreRunSupport {
    /// Adds an observer of every activity to `mode` of `loop`, appending `prefix` + the activity's name.
    ///
    /// - Returns: The observer, so a test can remove or invalidate it.
    @discardableResult
    static func recordActivities(
        of loop: Loop,
        in mode: Loop.Mode = .default,
        into recorder: Recorder<String>,
        prefix: String = "",
        activities: Loop.Activity = .all,
        order: Int = 0
    ) -> LoopObserver {
        let observer = LoopObserver(activities: activities, order: order) { _, activity in
            recorder.append(prefix + "\(activity)")
        }
        try! loop.add(observer, to: mode)
        return observer
    }

    /// The time from `start` to now.
    static func elapsed(since start: Loop.Instant) -> Duration {
        Loop.Instant.now - start
    }

    /// Generous upper bound on scheduling delays on a loaded two-core machine.
    static let slack: Duration = .seconds(2)

    /// A thread that stops `loop` if ``finish()`` is not called within `timeout`: a guard for tests that call the
    /// unbounded ``Loop/run()``, so a failure shows as a failed expectation instead of a hang.
    final class Watchdog: Sendable {
        private let done = ItemsSupport.Flag()
        private let fired = ItemsSupport.Flag()
        private let thread: TestThread

        init(stopping loop: Loop, after timeout: Duration = .seconds(20)) {
            let done = self.done
            let fired = self.fired
            thread = TestThread {
                if !waitUntil(timeout: timeout, { done.isSet }) {
                    fired.set()
                    // Keep stopping until the run returns (a stop between two runs of `run()` would be lost).
                    while !done.isSet {
                        loop.stop()
                        usleep(1000)
                    }
                }
            }
        }

        /// Marks the guarded run as returned, joins the thread, and answers whether the watchdog had to stop it.
        func finish() -> Bool {
            done.set()
            thread.join()
            return fired.isSet
        }
    }
}
