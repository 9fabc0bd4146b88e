import Glibc
import RunLoopKit

/// Waiting for a condition with a deadline, the soak's only way of waiting for other threads: never a sleep of a
/// guessed length followed by a look.
enum Waiting {
    /// Looks at `condition` every `interval` until it holds or `deadline` passes; answers whether it held.
    @discardableResult
    static func until(
        _ deadline: Loop.Instant, every interval: Duration = .milliseconds(1), _ condition: () -> Bool
    ) -> Bool {
        while !condition() {
            if Loop.Instant.now >= deadline { return condition() }
            pause(interval)
        }
        return true
    }

    /// A deadline `duration` from now.
    static func deadline(in duration: Duration) -> Loop.Instant {
        .now + duration
    }

    /// Sleeps for about `duration` (less when a signal interrupts it: callers look at their condition again).
    static func pause(_ duration: Duration) {
        let nanoseconds = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        _ = nanosleep(&request, nil)
    }

    /// Sleeps until the monotonic clock reads `instant`, whatever signals arrive meanwhile: the sampler's tick.
    static func sleep(until instant: Loop.Instant) {
        var request = timespec(
            tv_sec: Int(instant.nanoseconds / 1_000_000_000), tv_nsec: Int(instant.nanoseconds % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &request, nil) == EINTR {}
    }
}
