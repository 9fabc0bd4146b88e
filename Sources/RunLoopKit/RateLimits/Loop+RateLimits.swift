import RunLoopKitSystem

/// Rate limits (``RateLimit``): a custom source, descriptor source or timer whose handler would be called more than
/// its burst within its interval is paused until the interval's window ends (sd-event's ratelimited state). The
/// pass checks an item's ``LoopItem/appliedRateLimiter`` before each handler call (one load and a branch for an item
/// without a limit); the rest, here, runs only when a limit is set, a pause begins or a pause ends.
///
/// A pause is ended by a one-shot callback of the loop's own table, scheduled for every mode
/// (``CallbackSlots/anyModeID``) and keeping no run alive: the paused item, still in its modes, does that.
extension Loop {
    /// Applies what was last asked of `item`'s rate limit: counts by the new limit, or, with none, stops counting and
    /// ends a pause at once. Loop thread only.
    func applyRateLimit(_ item: AnyItem) {
        let base = item.base
        guard let limiter = base.existingRateLimiter else { return }
        guard let limit = limiter.settings.withLock({ $0.limit }) else {
            base.appliedRateLimiter = nil
            if limiter.isPaused { endRateLimitPause(of: item, limiter, cancellingCallback: true) }
            limiter.callsInWindow = 0
            return
        }
        limiter.intervalNanoseconds = limit.interval.saturatingNanoseconds
        limiter.burst = limit.burst
        base.appliedRateLimiter = .passUnretained(limiter)
    }

    /// What an item joining a mode of this loop needs of its rate limit: the limit set before it was added (or from
    /// another thread, not applied yet), and no pause left over from a loop whose thread exited. Loop thread only.
    func adoptRateLimit(_ item: AnyItem) {
        guard let limiter = item.base.existingRateLimiter else { return }
        if limiter.isPaused, limiter.pausedBy != ObjectIdentifier(self) {
            limiter.endPause()  // That loop's table, with the callback that would have ended it, is gone.
        }
        applyRateLimit(item)
    }

    /// Whether the rate limit of a source about to be performed holds it back: counts the perform if not, else pauses
    /// the source, which stays signalled (and out of the queue) until the pause ends. Only for a source with a limit
    /// (the pass checks ``LoopItem/appliedRateLimiter`` first, so a source without one pays a load and a branch). Loop
    /// thread only.
    @inline(never)
    func rateLimitHoldsBack(_ borrowed: Unmanaged<LoopSource>) -> Bool {
        let source = borrowed.takeUnretainedValue()
        guard let limiter = source.activeRateLimiter, !limiter.admitsCall(at: clockNow()) else {
            return false
        }
        if pause(.source(source), limiter) { tellRateLimitHandler(of: .source(source), limiter, isLimited: true) }
        return true
    }

    /// Whether the rate limit of a timer about to fire holds it back: counts the firing if not, else pauses the timer,
    /// out of the heap (idle) until the pause ends, when it fires once in place of all the firings due meanwhile. Only
    /// for a timer with a limit. Loop thread only.
    @inline(never)
    func rateLimitHoldsBack(_ timer: LoopTimer) -> Bool {
        guard let limiter = timer.activeRateLimiter, !limiter.admitsCall(at: clockNow()) else {
            return false
        }
        timer.state = .idle
        if pause(.timer(timer), limiter) { tellRateLimitHandler(of: .timer(timer), limiter, isLimited: true) }
        return true
    }

    /// Whether the rate limit of a descriptor source about to be told `events` holds it back: counts the call if not,
    /// else pauses the source (what it watches leaves the epoll set) and, if no other source of its registration in
    /// `state` watches what was reported, parks the registration, so that level-triggered readiness cannot wake the
    /// loop again and again meanwhile. Only for a source with a limit. Loop thread only.
    @inline(never)
    func rateLimitHoldsBack(
        _ source: DescriptorBackedSource, _ events: DescriptorBackedSource.Events, in state: ModeState
    ) -> Bool {
        guard let limiter = source.activeRateLimiter, !limiter.admitsCall(at: clockNow()) else {
            return false
        }
        let pausedNow = pause(.descriptor(source), limiter)
        // Also when paused already: another source of the registration claimed the report for it this time.
        if let watch = source.watch, isRegistered(watch) {
            let claimed = watch.claimed(inModeID: state.id)
            if !claimed.isSuperset(of: events.intersection(.watchable)) { park(watch, claimed: claimed) }
        }
        if pausedNow { tellRateLimitHandler(of: .descriptor(source), limiter, isLimited: true) }
        return true
    }

    /// Pauses `item` until its limiter's window ends, unless it is paused already; answers whether it paused it now
    /// (the caller then tells the item's rate-limit handler, once the pass's state is settled). A descriptor source's
    /// events leave the epoll set. The caller keeps what the item was to handle (a custom source stays signalled; a
    /// timer waits, idle, for the end of the pause). Loop thread only.
    private func pause(_ item: AnyItem, _ limiter: RateLimiter) -> Bool {
        guard !limiter.isPaused else { return false }
        limiter.isPaused = true
        limiter.pausedBy = ObjectIdentifier(self)
        limiter.isLimited.store(true, ordering: .releasing)
        let sequence = timerTable.takeSequence()
        let end = limiter.windowEnd
        let carried = UncheckedItem(item)
        let resume = CallbackSlots.Stored { [unowned self] in
            guard let limiter = carried.item.base.existingRateLimiter, limiter.isPaused else { return }
            endRateLimitPause(of: carried.item, limiter, cancellingCallback: false)
        }
        limiter.resumeCallback = timerTable.insertCallback(
            fireTime: end, latestFireTime: end, sequence: sequence, modeID: CallbackSlots.anyModeID, remoteID: 0,
            callback: resume)
        if case .descriptor(let source) = item, let watch = source.watch { refresh(watch) }
        return true
    }

    /// Ends `item`'s pause: a new window opens at its next handler call, and what it kept is handled (a signalled
    /// source is queued for the next perform step, a descriptor source watches again, a timer due meanwhile is
    /// scheduled to fire once). The rate-limit handler is told, unless the item was invalidated. Loop thread only.
    func endRateLimitPause(of item: AnyItem, _ limiter: RateLimiter, cancellingCallback: Bool) {
        if cancellingCallback, let (slot, generation) = limiter.resumeCallback {
            var released = CallbackSlots.Stored.nothing
            if let ended = timerTable.cancel(slot: slot, generation: generation, released: &released) {
                callbackEnded(ended)
            }
            limiter.endPause()
            withExtendedLifetime(released) {}  // Released with the table and the limiter consistent again.
        } else {
            limiter.endPause()
        }
        guard item.base.isValid else { return }
        switch item {
        case .source(let source):
            if source.isInAnyMode && source.signalled.load(ordering: .acquiring) { queueSignalled(source) }
        case .descriptor(let source):
            if let watch = source.watch { refresh(watch) }
        case .timer(let timer):
            if timer.state == .idle && timer.isInAnyMode { schedule(timer) }
        case .observer:
            break
        }
        tellRateLimitHandler(of: item, limiter, isLimited: false)
    }

    /// Ends the pause of an item being invalidated, silently: its callback is cancelled and nothing is handled.
    /// Loop thread only.
    func dropRateLimitPause(of item: AnyItem) {
        guard let limiter = item.base.existingRateLimiter, limiter.isPaused else { return }
        endRateLimitPause(of: item, limiter, cancellingCallback: true)
    }

    /// Calls the item's rate-limit handler, if one is set. Loop thread only.
    private func tellRateLimitHandler(of item: AnyItem, _ limiter: RateLimiter, isLimited: Bool) {
        guard let callout = limiter.settings.withLock({ $0.callout }) else { return }
        callout(item.base, isLimited)
    }
}
