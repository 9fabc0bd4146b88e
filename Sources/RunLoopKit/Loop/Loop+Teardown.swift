import RunLoopKitSystem

/// A loop's end: when its thread exits, the registry's destructor tears it down (CF's `__CFFinalizeRunLoop`).
extension Loop {
    /// Called by the registry when the owning thread exits: removes every item, drops blocks, closes descriptors.
    /// Traps if an actor job is still queued (it could never run, and its task would wait forever).
    func tearDownOnThreadExit() {
        applyChanges()
        control.lifecycle.store(.tearingDown, ordering: .releasing)
        closeInbox()
        for (_, item) in modeTable.commonItems { item.base.isCommon = false }
        modeTable.commonItems.removeAll()
        modeTable.commonCounts.reset()
        for state in modeTable.list {
            for source in state.sources { removeFromMode(.source(source), state) }
            for timer in state.timers { removeFromMode(.timer(timer), state) }
            for observer in state.observers { removeFromMode(.observer(observer), state) }
            for source in state.descriptorSources { removeFromMode(.descriptor(source), state) }
        }
        forgetRegistrations()  // Each source is registered afresh by the loop it joins next, if any.
        descriptorTable.failed.removeAll()  // Last calls no run of their modes made: the thread is gone.
        let callbacks = timerTable.removeAll()  // The timers left with their modes; the callbacks remain.
        signalStack.close { $0.queued = false }  // A signal from another thread from now on keeps nothing here.
        for source in signalStack.pending { source.queued = false }  // Still signalled: performed where it goes next.
        signalStack.pending.removeAll()
        trapOnQueuedJobs()
        blocks.removeAll(pool: inbox.segments)
        let passHandler = metricsKeeper.passReporter.handler  // Released with the callbacks: it may capture anything.
        metricsKeeper.passReporter.handler = nil
        poller.close()
        // Released here, with the loop consistent: their deinits may call in.
        withExtendedLifetime((callbacks, passHandler)) {}
        // Every item is out of this loop now, its state reset: another loop may take it (``LoopItem/bind(to:)``).
        control.lifecycle.store(.released, ordering: .releasing)
    }

    /// Traps if an actor job is still queued as the loop's thread exits: it could never run on the actor's thread
    /// and its task would wait forever. Loop thread only, in the teardown.
    func trapOnQueuedJobs() {
        let jobs = blocks.count { $0.job != nil }
        guard jobs > 0 else { return }
        trap(
            "RunLoopKit: the thread of \(loopDescriptionForTraps) exited with \(jobs) actor job(s) still queued; "
                + "they can never run (an actor on a loop needs its thread: run the loop, or keep its LoopThread, "
                + "until the actor's work is done)")
    }
}
