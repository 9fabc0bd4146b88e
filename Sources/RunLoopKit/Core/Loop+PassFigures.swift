/// The per-pass handler: a closure the loop calls at the end of every pass with that pass's figures, for exporting
/// pass durations to a metrics library (SwiftNIO's `NIOEventLoopMetricsDelegate` and its tick info).
extension Loop {
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

    /// Calls `handler` on the loop's thread at the end of every pass, with that pass's figures; `nil` stops the
    /// calls. Safe from any thread.
    ///
    /// On the loop's thread the handler is replaced at once; from another thread the change reaches the loop's
    /// thread at its next pass or block point (a sleeping loop is woken for it), as an item change does. Either way
    /// the first pass to begin afterwards is the first the new handler sees, and a removed handler is not called
    /// again, not even for the pass in progress. One handler per loop: setting one replaces the previous one. On a
    /// loop whose thread has exited nothing is set: no pass will come.
    ///
    /// The handler is called after the pass's last blocks and before its exit checks, once per pass, passes of
    /// nested runs included, with a value the loop builds on the stack: a pass allocates nothing for it. The figures
    /// hold nanoseconds; their `Duration` properties are computed when read. A run
    /// nested in the handler itself is not reported (the handler is not called again while it runs). It may call
    /// ``stop()``, which ends the run after this pass.
    ///
    /// - Warning: The handler runs on the loop's thread at the end of every pass: keep it short (record into a
    ///   histogram, bump counters). Work done there delays everything the loop handles next.
    public func reportPasses(to handler: (@Sendable (PassFigures) -> Void)?) {
        onLoopThread { [self] in metricsKeeper.passReporter.handler = handler }
    }
}
