import RunLoopKitSystem
import Synchronization

extension Loop {
    /// Runs the loop in the default mode until it is stopped or nothing keeps the mode alive: no source,
    /// descriptor source, timer or one-shot callback that keeps runs alive, and no block queued for it. Loop thread
    /// only (traps otherwise).
    ///
    /// Like `CFRunLoopRun`: stopping ends it (unlike Foundation's `RunLoop.run()`, which only an empty mode ends).
    ///
    /// On the main thread, where ``current`` is ``main``: the main loop serves Dispatch's main queue (and with it
    /// `@MainActor` work), which by default keeps this run going until ``stop()``, as `CFRunLoopRun()` on the main
    /// thread never finishes. That is what an app needs: a `Task { @MainActor in … }` awaiting another thread's reply
    /// must not see the program end under it. A script or daemon whose work is all in the loop's items sets
    /// ``mainQueueKeepsRunAlive`` to `false` first, and this run then returns once those items are done (after
    /// serving main-queue work still queued):
    ///
    /// ```swift
    /// let loop = Loop.main
    /// loop.mainQueueKeepsRunAlive = false  // A script: end when the timer below is done.
    /// try loop.add(try LoopTimer(after: .milliseconds(10)) { _ in print("tick") })
    /// loop.run()  // Returns after "tick".
    /// ```
    public func run() {
        preconditionOnLoopThread("run()")
        while true {
            let result = run(mode: .default, deadline: .max, pollOnce: false, returnAfterSourceHandled: false)
            if result == .stopped || result == .finished { return }
        }
    }

    /// Runs the loop in `mode` for at most `duration`. Loop thread only (traps otherwise).
    ///
    /// May be called from inside a callout of a run already in progress (a nested run, in the same or another
    /// mode); each run sends its own entry and exit activities.
    /// - Parameters:
    ///   - mode: The mode to run. Running ``Mode/common`` answers ``RunResult/finished`` at once, as in CF.
    ///   - duration: The time limit. Zero or negative: one pass that does not sleep, then ``RunResult/timedOut``.
    ///     Above ``LoopTimer/maximumInterval``: no limit.
    ///   - returnAfterSourceHandled: Return after the first pass that performed a custom source or handled a
    ///     descriptor source (timers, blocks and wake-ups do not count, as in CF).
    /// - Returns: ``RunResult/finished`` at once, without entry or exit observers, if nothing keeps the mode alive
    ///   (no source, descriptor source, timer or block; on the main loop, a common mode is kept alive by the main queue
    ///   unless ``mainQueueKeepsRunAlive`` is `false`); otherwise why the run ended. A mode that becomes empty during a
    ///   pass (its last block ran, say) ends the run with ``RunResult/finished`` after that pass without sleeping (CF
    ///   sleeps until the time limit, then answers ``RunResult/timedOut``).
    @discardableResult
    public func run(in mode: Mode, for duration: Duration, returnAfterSourceHandled: Bool = false) -> RunResult {
        preconditionOnLoopThread("run(in:for:returnAfterSourceHandled:)")
        let pollOnce = duration <= .zero
        let deadline: Int64 =
            if pollOnce {
                .min  // Now: the run's start (a poll needs no reading of its own).
            } else if duration > LoopTimer.maximumInterval {
                .max
            } else {
                clockNow().addingSaturating(duration.saturatingNanoseconds)
            }
        return run(
            mode: mode, deadline: deadline, pollOnce: pollOnce, returnAfterSourceHandled: returnAfterSourceHandled)
    }

    /// `CFRunLoopRunSpecific`: checks the mode, brackets the passes with entry and exit, restores the outer run.
    ///
    /// `hostPass`: the run is ``runPass(in:)``'s, which readies ``pollDescriptor`` itself. Any other outermost run of
    /// a loop a host waits on (one the app starts from a host callback, say) ends awake, with no sleep announced:
    /// work sent from other threads would then write no eventfd, and the host's wait would not end. It makes the
    /// descriptor readable instead, so the host's next ``runPass(in:)`` readies the loop again.
    ///
    /// A run that polls once ends at its start: its `deadline` is not read.
    func run(
        mode name: Mode, deadline: Int64, pollOnce: Bool, returnAfterSourceHandled: Bool, hostPass: Bool = false
    ) -> RunResult {
        require(!createdBeforeFork, ForkGuard.message)  // First: in a fork() child such a loop is terminated too.
        require(!isTerminated, "RunLoopKit: running a loop whose thread has exited")
        guard name != .common else { return .finished }
        applyChanges()
        guard let state = existingMode(named: name) ?? modeNamedByPendingBlock(name), !isEmpty(state) else {
            return .finished
        }

        if runStack.depth == 0 {
            // A stop or wake-up sent while the loop was idle is forgotten, as in CF.
            control.stopRequested.store(false, ordering: .relaxed)
            control.wakeRequested.store(false, ordering: .relaxed)
        }
        let startedAt = metricsEnterRun()
        let outer = runStack.push(state, deadline: pollOnce ? startedAt : deadline)
        if servesMainQueue(in: state) { attachMainQueue() }
        setRunningMode(name)
        enter(state)

        notifyObservers(.entry)
        let watched = !hostPass && !runStack.ownRunWatchers.isEmpty
        if watched { announceOwnRun(entering: true) }
        let result = runPasses(
            in: state, startedAt: startedAt, pollOnce: pollOnce, returnAfterSourceHandled: returnAfterSourceHandled)
        if watched { announceOwnRun(entering: false) }
        notifyObservers(.exit)

        // A stop aimed at this run dies with it; it must not end the outer run.
        control.stopRequested.store(false, ordering: .relaxed)
        runStack.pop(restoring: outer)
        metricsExitRun()
        setRunningMode(runStack.mode?.name)
        if let outerMode = runStack.mode {
            enter(outerMode)
        } else if !hostPass && poller.isHosted.load(ordering: .relaxed) {
            poller.readyForHostUnlessWaiting()
        }
        return result
    }

    /// `__CFRunLoopRun`: passes until an exit condition holds. One pass, in the order of Docs/Iteration.md: each
    /// step is one function, in the file of its concept (blocks, sources, observers, the wait, timers, descriptors,
    /// the main queue). The first pass begins at `startedAt`, each next one where the previous one ended.
    private func runPasses(
        in state: ModeState, startedAt: Int64, pollOnce: Bool, returnAfterSourceHandled: Bool
    ) -> RunResult {
        var passStart = startedAt
        while true {
            applyChanges()
            let mark = markPass(startedAt: passStart)
            let recorded = recordPassStart(passStart)
            notifyObservers(.beforeTimers)
            notifyObservers(.beforeSources)
            runBlocks()
            var handledSource = performSignalledSources(onlyOne: returnAfterSourceHandled)
            if handledSource { runBlocks() }

            // An empty mode has nothing to sleep for (CF sleeps until the deadline): poll, then finish.
            let poll = handledSource || pollOnce || isEmpty(state)
            let eventCount = waitForEvents(poll: poll)
            fireDueTimers()
            if handleReadyDescriptors(count: eventCount) { handledSource = true }
            if serviceMainQueue(in: state) { handledSource = true }
            runBlocks()

            let passEnd = clockNow()
            recordPassEnd(recorded, endedAt: passEnd)
            endPass(mark, endedAt: passEnd)

            if handledSource && returnAfterSourceHandled { return .handledSource }
            // On virtual time the deadline ends a run only after a durably idle pass: what its instant made ready
            // runs first (a real loop's deadline is met as it comes; only a virtual one's is then tested further).
            if pollOnce || passEnd >= runStack.deadline && virtualRunMayEnd() { return .timedOut }
            if control.stopRequested.exchange(false, ordering: .acquiringAndReleasing) { return .stopped }
            if isEmpty(state) { return .finished }
            passStart = passEnd
        }
    }

    /// Whether a run in `state` has nothing to wait for: nothing keeps it alive (``nothingKeepsAlive(_:)``) and
    /// no block, actor job or main-queue work it could run is queued.
    func isEmpty(_ state: ModeState) -> Bool {
        guard nothingKeepsAlive(state) else { return false }
        return !blocks.contains { canRun($0, state) } && !hasQueuedMainQueueWork(in: state)
            && !hasFailedSource(in: state)
    }

    /// The mode `name` created because a pending block names it (CF creates a block's modes when it is queued;
    /// creating them here keeps ``perform(in:_:)`` free of dictionary work).
    private func modeNamedByPendingBlock(_ name: Mode) -> ModeState? {
        let named = blocks.contains { $0.modes.names(name) }
        return named ? mode(named: name) : nil
    }

    /// Puts back in play what was set aside while `state` was not running: due timers and callbacks and ready
    /// descriptors parked because none of their modes ran.
    func enter(_ state: ModeState) {
        // Checked here, where it costs a load: a run's entry (each nested run's exit too) usually has nothing parked.
        if !timerTable.parked.isEmpty { resumeParkedTimers(in: state) }
        if !descriptorTable.parked.isEmpty { resumeParkedWatches(in: state) }
    }
}
