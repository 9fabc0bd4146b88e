/// Observers (``LoopObserver``): called at the activities of runs and passes (steps 1, 2, 6 and 8 of a pass, and
/// a run's entry and exit).
extension Loop {
    /// Steps 1, 2, 6, 8 and the run's entry and exit: calls the current mode's observers of `activity`.
    ///
    /// Observers added during the call are not called this time; one whose handler is running (a nested run)
    /// is skipped; one invalidated before its turn is skipped.
    @inline(__always)
    func notifyObservers(_ activity: Activity) {
        // Inline, so a pass with no observer of `activity` (most of them) pays a load and a test, not a call.
        guard let state = runStack.mode, state.observedActivities.contains(activity) else { return }
        callObservers(of: activity, in: state)
    }

    @inline(never)
    private func callObservers(of activity: Activity, in state: ModeState) {
        let snapshot = state.observers  // Retains the array; a change during the calls copies it instead.
        for observer in snapshot where observer.activities.contains(activity) {
            guard observer.isValid, !observer.isFiring else { continue }
            observer.isFiring = true
            MetricsKeeper.bump(metricsKeeper.observerCalls)
            let token = recordCalloutStart(.observer, at: observer.callSite)
            observer.handler(observer, activity)
            recordCalloutEnd(token)
            observer.isFiring = false
            if !observer.repeats { observer.invalidate() }
        }
    }
}
