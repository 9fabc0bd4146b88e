/// Custom sources (``LoopSource``): any thread signals one; the loop performs the signalled sources of the
/// running mode at step 4 of a pass, lower order first. A pass costs what was signalled, never what is
/// registered: signals reach the loop through a lock-free stack, and the loop keeps only the signalled ones.
extension Loop {
    /// Hands a newly signalled source to this loop: pushed on the lock-free stack, and the loop woken if asleep.
    ///
    /// Once the loop's thread has exited the stack is closed and keeps nothing: the source stays signalled, for
    /// the loop it joins next.
    func enqueueSignalled(_ source: LoopSource) {
        guard control.lifecycle.load(ordering: .relaxed) == .alive else { return }  // Relaxed: a hint only.
        if signalStack.push(source) { poller.wakeIfSleeping() }
    }

    /// Step 4: performs the signalled sources of the running mode, lower order first; answers whether any ran.
    ///
    /// With `onlyOne`, performs the first and leaves the rest signalled for the next pass. A source signalled
    /// again during its own perform runs in a later pass.
    func performSignalledSources(onlyOne: Bool) -> Bool {
        signalStack.popAll { source in queueSignalled(source) }
        guard let state = runStack.mode, !signalStack.pending.isEmpty else { return false }

        var due = scratch.sources.take()
        var kept = 0
        for index in signalStack.pending.indices {
            let source = signalStack.pending[index]
            if !source.isValid || !source.isInAnyMode {
                source.queued = false  // Re-queued by `addToMode` if it is added again while signalled.
            } else if source.isIn(modeID: state.id) && (!onlyOne || due.isEmpty) {
                source.queued = false
                due.append(source)
            } else {
                signalStack.pending[kept] = source
                kept += 1
            }
        }
        signalStack.pending.removeLast(signalStack.pending.count - kept)

        var performed = false
        for source in due {
            guard source.isValid else { continue }
            // An earlier callout of this pass may have taken the source out of the running mode (CF performs it
            // anyway): it keeps its signal for a pass of a mode it is still in.
            guard source.isIn(modeID: state.id) else {
                if source.isInAnyMode && source.signalled.load(ordering: .acquiring) { queueSignalled(source) }
                continue
            }
            // Borrowed (`due` holds it): a strong argument would cost every perform a retain, limit or not.
            if source.appliedRateLimiter != nil && rateLimitHoldsBack(.passUnretained(source)) { continue }
            guard source.signalled.exchange(false, ordering: .acquiringAndReleasing) else { continue }
            MetricsKeeper.bump(metricsKeeper.sourcesPerformed)
            let token = recordCalloutStart(.source, at: source.callSite)
            source.performHandler(source)
            recordCalloutEnd(token)
            performed = true
        }
        scratch.sources.give(&due)
        return performed
    }

    /// Inserts a signalled source into the sorted queue (after sources of equal order), once.
    func queueSignalled(_ source: LoopSource) {
        guard !source.queued, source.isValid else { return }
        source.queued = true
        var low = 0
        var high = signalStack.pending.count
        while low < high {
            let middle = (low + high) / 2
            if signalStack.pending[middle].order <= source.order { low = middle + 1 } else { high = middle }
        }
        signalStack.pending.insert(source, at: low)
    }
}
