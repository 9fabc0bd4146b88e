import Glibc

/// The clocks the harness reads: `CLOCK_MONOTONIC` for every time stamp, the process CPU clock for W5.
enum Clock {
    /// Nanoseconds on `CLOCK_MONOTONIC` (the loop's own clock).
    ///
    /// The corresponding C call is `clock_gettime(2)`, served by the vDSO.
    @inline(__always)
    static func monotonic() -> Int64 {
        read(CLOCK_MONOTONIC)
    }

    /// CPU time used so far by all threads of this process, in nanoseconds.
    ///
    /// The corresponding C call is `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`.
    static func processCPU() -> Int64 {
        read(CLOCK_PROCESS_CPUTIME_ID)
    }

    /// Sleeps until `deadline` on `CLOCK_MONOTONIC` (an absolute time, so a schedule does not drift).
    ///
    /// The corresponding C call is `clock_nanosleep(2)` with `TIMER_ABSTIME`, retried on `EINTR`.
    static func sleep(until deadline: Int64) {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }

    @inline(__always)
    private static func read(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}
