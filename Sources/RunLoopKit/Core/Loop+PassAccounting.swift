import RunLoopKitSystem

/// Keeping the figures of ``metrics`` and calling the pass handler: the loop's thread counts callouts where it makes
/// them (``MetricsKeeper/bump(_:)``, in the file of their step), and changes phase and ends passes here. A pass's end
/// reuses the reading the exit checks take anyway; a change of phase (a sleep's start and end, an outermost run's
/// entry and exit) takes its own, inside the sequence lock's write (``MetricsKeeper/changePhase(of:to:)``).
extension Loop {
    /// A run begins: answers the clock reading its first pass starts at. An outermost run makes the loop awake from
    /// then on; a nested one changes nothing (the loop is awake already). Loop thread only, before the run's frame
    /// is pushed.
    @inline(__always)
    func metricsEnterRun() -> Int64 {
        guard runStack.depth == 0 else { return MonotonicClock.now() }
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
