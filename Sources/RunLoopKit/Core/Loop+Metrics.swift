import RunLoopKitSystem

/// Loop metrics: passes, time asleep and awake, the longest pass and what was handled, readable from any thread
/// without a lock, as libuv's `uv_metrics_info` and `uv_metrics_idle_time` and Node's event-loop utilisation.
extension Loop {
    /// A snapshot of a loop's figures since it was created: completed passes, time asleep and awake, the longest
    /// pass, and the callouts it made by kind.
    ///
    /// Read with ``Loop/metrics`` from any thread. Two snapshots of one loop make a window: the difference of
    /// their counts is what the loop did in between, and ``utilization(since:)`` the share of that time it was
    /// busy (Node's `performance.eventLoopUtilization(previous)`).
    ///
    /// Time is counted only while a run is in progress: the loop is *asleep* while blocked in `epoll_wait` (a poll
    /// that does not block is awake time) and *awake* the rest of the time its runs last, callouts and nested runs
    /// included. Time between runs counts as neither: a loop driven by another event loop (``runPass(in:)``) is
    /// awake inside its passes, and its host's wait is not its sleep.
    public struct Metrics: Sendable, Hashable {
        /// When the snapshot was taken (the phase in progress then counts up to this instant).
        public var takenAt: Instant
        /// Passes completed, those of nested runs included.
        public var passes: Int
        /// Time blocked in `epoll_wait`, a sleep in progress included.
        public var timeAsleep: Duration
        /// Time in runs, not asleep, the current stretch included.
        public var timeAwake: Duration
        /// The longest time one pass was awake so far: its length less its sleep, callouts and nested runs included
        /// (less their own sleeps).
        ///
        /// The sleep is left out because a pass spans it (blocks and sources, the sleep, then timers and
        /// descriptors): with it, an idle loop's longest pass would be its longest sleep. What is left is how long
        /// the loop could not react: a handler that computes for 50 ms makes it at least 50 ms. It counts when the
        /// pass ends, which may be after the loop's next sleep.
        public var longestPass: Duration
        /// The callouts made, by kind.
        public var handled: HandledCounts

        /// A snapshot with the given figures, zero by default. Made by the loop only, so the type can gain
        /// figures without breaking code that reads it.
        init(
            takenAt: Instant = Instant(nanoseconds: 0),
            passes: Int = 0,
            timeAsleep: Duration = .zero,
            timeAwake: Duration = .zero,
            longestPass: Duration = .zero,
            handled: HandledCounts = HandledCounts()
        ) {
            self.takenAt = takenAt
            self.passes = passes
            self.timeAsleep = timeAsleep
            self.timeAwake = timeAwake
            self.longestPass = longestPass
            self.handled = handled
        }

        /// The share of the loop's running time it was awake, from 0 (always asleep) to 1 (never slept), over its
        /// whole life; 0 before it ever ran.
        public var utilization: Double { utilization(since: Metrics()) }

        /// The share of the time between `earlier` and this snapshot that the loop was awake: awake time ÷ (awake
        /// time + asleep time), from 0 to 1; 0 when the loop did not run in between. Node's
        /// `eventLoopUtilization(previous).utilization`.
        ///
        /// Pass an earlier snapshot of the same loop. A monitor keeps the previous snapshot and asks each time:
        /// near 1 means the loop has no slack left, and work sent to it waits.
        public func utilization(since earlier: Metrics) -> Double {
            let awake = timeAwake - earlier.timeAwake
            let total = awake + (timeAsleep - earlier.timeAsleep)
            guard total > .zero else { return 0 }
            return min(1, max(0, awake / total))
        }
    }

    /// The loop's figures now: passes, time asleep and awake, the longest pass, and what it handled. Safe from any
    /// thread, without a lock.
    ///
    /// Each count is exact at the moment it is read (the loop's thread updates it as it makes the callout, the pass
    /// count as each pass ends); the counts are read one after another. The time figures are one consistent moment:
    /// the sleep or awake stretch in progress counts up to the moment of reading. The loop keeps the figures all the
    /// time, without an extra system call: a few plain stores per pass, two clock readings per sleep and per outermost
    /// run (see Docs/Services.md).
    ///
    /// A loop whose thread has exited keeps its last figures.
    public var metrics: Metrics {
        let (now, asleep, awake): (Int64, Int64, Int64)
        if isCurrent {
            now = MonotonicClock.now()
            (asleep, awake) = metricsKeeper.tally.totals(at: now)
        } else {
            (now, asleep, awake) = metricsKeeper.readTime(retrying: !createdBeforeFork)
        }
        return Metrics(
            takenAt: Instant(nanoseconds: now), passes: metricsKeeper.passes.load(ordering: .relaxed),
            timeAsleep: .nanoseconds(asleep), timeAwake: .nanoseconds(awake),
            longestPass: .nanoseconds(metricsKeeper.longestPass.load(ordering: .relaxed)),
            handled: metricsKeeper.handled)
    }
}
