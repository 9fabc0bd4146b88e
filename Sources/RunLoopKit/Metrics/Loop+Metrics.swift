import RunLoopKitSystem

/// Loop metrics: reading them (``metrics``), the per-pass handler (``reportPasses(to:)``), and keeping the figures.
/// The loop's thread counts callouts where it makes them (``MetricsKeeper/bump(_:)``, in the file of their step),
/// and changes phase and ends passes here. A pass's end reuses the reading the exit checks take anyway; a change of phase (a sleep's start and end, an outermost run's
/// entry and exit) takes its own, inside the sequence lock's write (``MetricsKeeper/changePhase(of:to:)``).
extension Loop {
    /// The loop's figures now: passes, time asleep and awake, the longest pass, and what it handled. Safe from any
    /// thread, without a lock.
    ///
    /// Each count is exact at the moment it is read (the loop's thread updates it as it makes the callout, the pass
    /// count as each pass ends); the counts are read one after another. The time figures are one consistent moment:
    /// the sleep or awake stretch in progress counts up to the moment of reading. The loop keeps the figures all the
    /// time, without an extra system call: a few plain stores per pass, two clock readings per sleep and per outermost
    /// run (see Docs/Metrics.md).
    ///
    /// A loop whose thread has exited keeps its last figures.
    public var metrics: Metrics {
        let (now, asleep, awake): (Int64, Int64, Int64)
        if isCurrent {
            now = clockNow()
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

    /// A run begins: answers the clock reading its first pass starts at. An outermost run makes the loop awake from
    /// then on; a nested one changes nothing (the loop is awake already). Loop thread only, before the run's frame
    /// is pushed.
    @inline(__always)
    func metricsEnterRun() -> Int64 {
        guard runStack.depth == 0 else { return clockNow() }
        return metricsKeeper.changePhase(to: .awake)
    }

    /// A run ended: after an outermost run the loop is outside runs. Loop thread only, after the run's frame was
    /// popped.
    @inline(__always)
    func metricsExitRun() {
        guard runStack.depth == 0 else { return }
        _ = metricsKeeper.changePhase(to: .outside)
    }

    /// The loop is about to block in `epoll_wait`. Loop thread only. Out of line: a pass that polls pays a test.
    @inline(never)
    func metricsBeginSleep() {
        _ = metricsKeeper.changePhase(to: .asleep)
    }

    /// The loop returned from a blocking `epoll_wait`. Loop thread only.
    @inline(never)
    func metricsEndSleep() {
        _ = metricsKeeper.changePhase(to: .awake)
    }

    /// Marks the start of a pass beginning at `startedAt`; keeps the callouts counted so far if a pass handler is set.
    /// Loop thread only.
    @inline(__always)
    func markPass(startedAt: Int64) -> PassMark {
        let isReported = metricsKeeper.passReporter.handler != nil
        if isReported { markReportedPass() }
        return PassMark(startedAt: startedAt, asleep: metricsKeeper.tally.asleep, isReported: isReported)
    }

    /// Keeps the callouts counted so far for the handler's figures of the pass beginning now.
    @inline(never)
    private func markReportedPass() {
        metricsKeeper.passReporter.markStart(metricsKeeper.handled, depth: runStack.depth)
    }

    /// The pass marked `mark` ends at `endedAt`: counted, the time it was awake (its length less its sleep) weighed
    /// against the longest, and the pass handler called if one was set when it began. Loop thread only.
    @inline(__always)
    func endPass(_ mark: PassMark, endedAt: Int64) {
        MetricsKeeper.bump(metricsKeeper.passes)
        let duration = endedAt &- mark.startedAt
        let slept = metricsKeeper.tally.asleep &- mark.asleep
        if duration &- slept > metricsKeeper.tally.longestPass { recordLongestPass(duration &- slept) }
        if mark.isReported { reportPass(startedAt: mark.startedAt, duration: duration, slept: slept) }
    }

    /// A pass awake longer than every earlier one, for `awake` nanoseconds.
    @inline(never)
    private func recordLongestPass(_ awake: Int64) {
        metricsKeeper.tally.longestPass = awake
        metricsKeeper.longestPass.store(awake, ordering: .relaxed)
    }

    /// Calls the pass handler with the figures of the pass that just ended, unless it is running already (a run
    /// nested in it) or was removed during the pass.
    @inline(never)
    private func reportPass(startedAt: Int64, duration: Int64, slept: Int64) {
        guard let handler = metricsKeeper.passReporter.handler, !metricsKeeper.passReporter.isCalling else { return }
        let figures = PassFigures(
            number: metricsKeeper.passes.load(ordering: .relaxed), depth: runStack.depth, startedAt: startedAt,
            duration: duration, slept: slept,
            handled: metricsKeeper.handled - metricsKeeper.passReporter.start(depth: runStack.depth))
        metricsKeeper.passReporter.isCalling = true
        handler(figures)
        metricsKeeper.passReporter.isCalling = false
    }
}
