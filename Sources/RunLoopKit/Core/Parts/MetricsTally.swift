/// Where a loop's time goes, as its thread counts it for ``Loop/metrics``: time asleep and awake, the phase in
/// progress, the longest pass (awake). Loop thread only; other threads read the copy in ``MetricsKeeper``, where the counts
/// live too.
///
/// Time is kept by phase, for the loop as a whole rather than per pass, so nested runs are never counted twice: the
/// loop is outside every run, awake in one (its passes, callouts and nested runs), or asleep in `epoll_wait`. Each
/// change of phase adds the time since the previous one to the phase it ends, from clock readings the loop takes
/// anyway or, around a sleep and at an outermost run's entry and exit, readings of their own.
struct MetricsTally {
    /// Where the loop's time goes now.
    enum Phase: Int {
        /// No run in progress: the time counts as neither asleep nor awake.
        case outside = 0
        /// In a run, not asleep.
        case awake = 1
        /// Blocked in `epoll_wait`.
        case asleep = 2
    }

    /// Nanoseconds asleep and awake in phases that ended.
    var asleep: Int64 = 0
    var awake: Int64 = 0
    /// The current phase, and the monotonic time it began.
    var phase = Phase.outside
    var phaseSince: Int64 = 0
    /// The longest time a pass was awake so far (its length less its sleep), in nanoseconds; the loop's own copy of
    /// ``MetricsKeeper/longestPass``.
    var longestPass: Int64 = 0

    /// Ends the current phase at `time`, adding its length to its total, and begins `next`.
    @inline(__always)
    mutating func enter(_ next: Phase, at time: Int64) {
        let elapsed = max(0, time &- phaseSince)
        switch phase {
        case .outside: break
        case .awake: awake &+= elapsed
        case .asleep: asleep &+= elapsed
        }
        phase = next
        phaseSince = time
    }

    /// Time asleep and awake up to `now`: the phase in progress counts up to it (nothing if it began later).
    func totals(at now: Int64) -> (asleep: Int64, awake: Int64) {
        let current = max(0, now &- phaseSince)
        return (phase == .asleep ? asleep &+ current : asleep, phase == .awake ? awake &+ current : awake)
    }
}
