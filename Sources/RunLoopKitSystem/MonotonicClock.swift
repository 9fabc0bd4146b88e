import Glibc

/// `CLOCK_MONOTONIC`, the clock every loop deadline and the timerfd use.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary fixed point (boot), never going backwards.
    ///
    /// The corresponding C call is `clock_gettime(2)` (served by the vDSO, no kernel entry).
    @inlinable @inline(__always)
    public static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}
