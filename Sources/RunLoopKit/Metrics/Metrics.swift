import RunLoopKitSystem

/// What a loop's metrics are made of, as values: ``Loop/Metrics`` (a snapshot of its life, readable from any
/// thread without a lock, as libuv's `uv_metrics_info` and `uv_metrics_idle_time` and Node's event-loop
/// utilisation), ``Loop/PassFigures`` (one pass, for a per-pass handler such as SwiftNIO's
/// `NIOEventLoopMetricsDelegate`), and ``Loop/HandledCounts`` (the callouts of both, by kind).
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

    /// One pass's figures, handed to the handler set with ``reportPasses(to:)`` at the end of the pass, on the
    /// loop's thread.
    ///
    /// A pass runs from the end of the previous pass of its run (its first pass from the run's entry, entry
    /// observers included) to its exit checks: its figures cover everything in between, the sleep and any run
    /// nested in one of its callouts included. To add passes up to ``Loop/Metrics`` totals, add those with
    /// ``depth`` 1 (the passes of nested runs are inside them).
    ///
    /// Made by the loop only, so it can gain figures without breaking code that reads it.
    public struct PassFigures: Sendable, Hashable {
        /// The pass's number: 1 for the loop's first pass; ``Loop/Metrics/passes`` counts up to it.
        public var number: Int
        /// How deep runs were nested: 1 for a pass of an outermost run, 2 for a run nested in one of its callouts.
        public var depth: Int
        /// When the pass began, on the monotonic clock.
        public var startedAt: Instant
        /// How long the pass took, its sleep included, in nanoseconds (``duration``).
        var durationNanoseconds: Int64
        /// How long the loop was asleep in `epoll_wait` during the pass, in nanoseconds (``slept``).
        var sleptNanoseconds: Int64
        /// The callouts the pass made, by kind.
        public var handled: HandledCounts

        /// Figures with the given values (for tests).
        init(
            number: Int, depth: Int, startedAt: Instant, duration: Duration, slept: Duration, handled: HandledCounts
        ) {
            self.number = number
            self.depth = depth
            self.startedAt = startedAt
            self.durationNanoseconds = duration.saturatingNanoseconds
            self.sleptNanoseconds = slept.saturatingNanoseconds
            self.handled = handled
        }

        /// The figures of a pass that just ended, from the loop's own readings.
        init(number: Int, depth: Int, startedAt: Int64, duration: Int64, slept: Int64, handled: HandledCounts) {
            self.number = number
            self.depth = depth
            self.startedAt = Instant(nanoseconds: startedAt)
            self.durationNanoseconds = duration
            self.sleptNanoseconds = slept
            self.handled = handled
        }

        /// How long the pass took, its sleep included. (For swift-metrics' `Timer.recordNanoseconds`:
        /// `duration / .nanoseconds(1)`, or the components.)
        public var duration: Duration { .nanoseconds(durationNanoseconds) }

        /// How long the loop was asleep in `epoll_wait` during the pass (zero for a pass that polled).
        public var slept: Duration { .nanoseconds(sleptNanoseconds) }

        /// How long the pass was awake: its ``duration`` less the time it ``slept``.
        public var awake: Duration { .nanoseconds(durationNanoseconds &- sleptNanoseconds) }

        /// When the pass ended.
        public var endedAt: Instant { Instant(nanoseconds: startedAt.nanoseconds &+ durationNanoseconds) }
    }

    /// How many callouts of each kind a loop made: sources performed, descriptor reports, timers fired, one-shot
    /// callbacks, observer calls, blocks, actor jobs and main-queue drains.
    ///
    /// A value type with no thread of its own: read it from a ``Loop/Metrics`` snapshot (any thread) or from the
    /// figures handed to a pass handler (the loop's thread). Subtract two to get what happened between them.
    public struct HandledCounts: Sendable, Hashable, CustomStringConvertible {
        /// Custom sources (``LoopSource``) performed.
        public var sourcesPerformed: Int
        /// Calls of descriptor sources' handlers (``FileDescriptorSource``, and the helpers built on it such as
        /// `SignalSource`), the last call of a failed source (``DescriptorBackedSource/Events/invalid``) included.
        public var descriptorReports: Int
        /// Timers (``LoopTimer``) fired.
        public var timersFired: Int
        /// One-shot callbacks (``Loop/schedule(at:tolerance:in:_:file:line:)``) run.
        public var callbacksRun: Int
        /// Observer (``LoopObserver``) calls, those at a run's entry and exit included.
        public var observerCalls: Int
        /// Blocks and function calls queued with `perform` that ran.
        public var blocksRun: Int
        /// Actor jobs run (an actor whose executor is the loop's).
        public var jobsRun: Int
        /// Drains of Dispatch's main queue (main loop only; one drain runs every main-queue item queued then).
        public var mainQueueDrains: Int

        /// Counts with the given values, zero by default. Made by the loop only, so the type can gain counts
        /// without breaking code that reads it.
        init(
            sourcesPerformed: Int = 0,
            descriptorReports: Int = 0,
            timersFired: Int = 0,
            callbacksRun: Int = 0,
            observerCalls: Int = 0,
            blocksRun: Int = 0,
            jobsRun: Int = 0,
            mainQueueDrains: Int = 0
        ) {
            self.sourcesPerformed = sourcesPerformed
            self.descriptorReports = descriptorReports
            self.timersFired = timersFired
            self.callbacksRun = callbacksRun
            self.observerCalls = observerCalls
            self.blocksRun = blocksRun
            self.jobsRun = jobsRun
            self.mainQueueDrains = mainQueueDrains
        }

        /// Every count added up: the callouts made.
        public var total: Int {
            sourcesPerformed + descriptorReports + timersFired + callbacksRun + observerCalls + blocksRun + jobsRun
                + mainQueueDrains
        }

        /// What was handled between `earlier` and `later` (counts of the same loop): each count's difference.
        public static func - (later: HandledCounts, earlier: HandledCounts) -> HandledCounts {
            HandledCounts(
                sourcesPerformed: later.sourcesPerformed &- earlier.sourcesPerformed,
                descriptorReports: later.descriptorReports &- earlier.descriptorReports,
                timersFired: later.timersFired &- earlier.timersFired,
                callbacksRun: later.callbacksRun &- earlier.callbacksRun,
                observerCalls: later.observerCalls &- earlier.observerCalls,
                blocksRun: later.blocksRun &- earlier.blocksRun,
                jobsRun: later.jobsRun &- earlier.jobsRun,
                mainQueueDrains: later.mainQueueDrains &- earlier.mainQueueDrains)
        }

        /// The counts in one line, e.g. `3 sources performed, 1 descriptor report, 0 timers fired, …`.
        public var description: String {
            func count(_ value: Int, _ one: String, _ many: String) -> String { "\(value) \(value == 1 ? one : many)" }
            return [
                count(sourcesPerformed, "source performed", "sources performed"),
                count(descriptorReports, "descriptor report", "descriptor reports"),
                count(timersFired, "timer fired", "timers fired"),
                count(callbacksRun, "callback run", "callbacks run"),
                count(observerCalls, "observer call", "observer calls"),
                count(blocksRun, "block run", "blocks run"),
                count(jobsRun, "job run", "jobs run"),
                count(mainQueueDrains, "main-queue drain", "main-queue drains"),
            ].joined(separator: ", ")
        }
    }
}
