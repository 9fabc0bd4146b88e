import CRunLoopShims
import Glibc

/// The timerfd calls the loop's timers use, each wrapped once.
package enum TimerFD {
    /// Creates a non-blocking, close-on-exec timerfd on `CLOCK_MONOTONIC`.
    ///
    /// The corresponding C call is `timerfd_create(2)`.
    package static func create() throws(SystemError) -> CInt {
        let descriptor = try retryingOnInterrupt("timerfd_create") {
            timerfd_create(CLOCK_MONOTONIC, CInt(TFD_CLOEXEC) | CInt(TFD_NONBLOCK))
        }
        return opened(descriptor, by: "timerfd_create")
    }

    /// Arms the timer to expire once at the absolute monotonic time `nanoseconds`.
    ///
    /// A time at or before now makes it expire at once. The corresponding C call is `timerfd_settime(2)`
    /// with `TFD_TIMER_ABSTIME`.
    package static func arm(_ descriptor: CInt, atMonotonicNanoseconds nanoseconds: Int64) throws(SystemError) {
        // An all-zero it_value would disarm: the earliest real instant is 1 ns.
        let when = max(nanoseconds, 1)
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(when / 1_000_000_000)
        spec.it_value.tv_nsec = Int(when % 1_000_000_000)
        _ = try retryingOnInterrupt("timerfd_settime", on: descriptor) {
            timerfd_settime(descriptor, CInt(TFD_TIMER_ABSTIME), &spec, nil)
        }
    }

    /// Disarms the timer: it does not expire until armed again, and an expiry not yet read is dropped, so the
    /// descriptor stops polling readable. The corresponding C call is `timerfd_settime(2)` with a zero `it_value`.
    package static func disarm(_ descriptor: CInt) throws(SystemError) {
        var spec = itimerspec()
        _ = try retryingOnInterrupt("timerfd_settime", on: descriptor) {
            timerfd_settime(descriptor, 0, &spec, nil)
        }
    }
}
