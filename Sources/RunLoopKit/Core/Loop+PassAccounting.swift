/// Keeping the figures of ``metrics`` and calling the pass handler: the loop's thread counts callouts where it makes
/// them (``MetricsCells/bump(_:)``, in the file of their step), and changes phase and ends passes here. A pass's end
/// reuses the reading the exit checks take anyway; a change of phase (a sleep's start and end, an outermost run's
/// entry and exit) takes its own, inside the sequence lock's write (``MetricsCells/changePhase(of:to:)``).
extension Loop {
    /// A run begins: answers the clock reading its first pass starts at. An outermost run makes the loop awake from
    /// then on; a nested one changes nothing (the loop is awake already). Loop thread only, before the run's frame
    /// is pushed.
    @inline(__always)
    func metricsEnterRun() -> Int64 {
        guard runStack.depth == 0 else { return MonotonicClock.now() }
        return metricsCells.changePhase(of: &metricsTally, to: .awake)
    }

    /// A run ended: after an outermost run the loop is outside runs. Loop thread only, after the run's frame was
    /// popped.
    @inline(__always)
    func metricsExitRun() {
        guard runStack.depth == 0 else { return }
        _ = metricsCells.changePhase(of: &metricsTally, to: .outside)
    }

    /// The loop is about to block in `epoll_wait`. Loop thread only. Out of line: a pass that polls pays a test.
    @inline(never)
    func metricsBeginSleep() {
        _ = metricsCells.changePhase(of: &metricsTally, to: .asleep)
    }

    /// The loop returned from a blocking `epoll_wait`. Loop thread only.
    @inline(never)
    func metricsEndSleep() {
        _ = metricsCells.changePhase(of: &metricsTally, to: .awake)
    }

    /// What a pass beginning now is measured from, if a pass handler is set (`nil`: nothing to report). Loop
    /// thread only.
    @inline(__always)
    func markPass() -> PassReporter.Mark? {
        guard passReporter.handler != nil else { return nil }
        return PassReporter.Mark(asleep: metricsTally.asleep, handled: metricsCells.handled)
    }

    /// A pass that began at `startedAt` ends at `endedAt`: counted, its length weighed against the longest, and the
    /// pass handler called if the pass was `mark`ed. Loop thread only.
    @inline(__always)
    func endPass(startedAt: Int64, endedAt: Int64, mark: PassReporter.Mark?) {
        let duration = endedAt &- startedAt
        MetricsCells.bump(metricsCells.passes)
        if duration > metricsTally.longestPass { recordLongestPass(duration) }
        if let mark { reportPass(startedAt: startedAt, duration: duration, mark: mark) }
    }

    /// A pass longer than every earlier one.
    @inline(never)
    private func recordLongestPass(_ duration: Int64) {
        metricsTally.longestPass = duration
        metricsCells.longestPass.store(duration, ordering: .relaxed)
    }

    /// Calls the pass handler with the figures of the pass that just ended, unless it is running already (a run
    /// nested in it) or was removed during the pass.
    @inline(never)
    private func reportPass(startedAt: Int64, duration: Int64, mark: PassReporter.Mark) {
        guard let handler = passReporter.handler, !passReporter.isCalling else { return }
        let figures = PassFigures(
            number: metricsCells.passes.load(ordering: .relaxed), depth: runStack.depth, startedAt: startedAt,
            duration: duration, slept: metricsTally.asleep &- mark.asleep, handled: metricsCells.handled - mark.handled)
        passReporter.isCalling = true
        handler(figures)
        passReporter.isCalling = false
    }
}
