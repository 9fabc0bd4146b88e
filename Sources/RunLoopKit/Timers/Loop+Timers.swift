import RunLoopKitSystem

/// Timers: every step of a ``LoopTimer`` and a one-shot callback from scheduling to firing, as libuv keeps its
/// timers in one file. Both kinds sit in the timer table's one heap, keyed by latest fire time and then sequence; the
/// loop arms its timerfd for the first key before it sleeps (at most once per sleep), and fires what is due at step 9
/// of a pass, in key order, parking what is due while none of its modes runs.
extension Loop {
    /// Puts `timer` in the heap for its current deadline. Loop thread only.
    func schedule(_ timer: LoopTimer) {
        timer.latestFireTime = timer.fireTime.addingSaturating(timer.toleranceNanoseconds)
        timer.sequence = timerTable.takeSequence()
        timerTable.insert(timer)
        timer.state = .scheduled
        noteLocalWork()
    }

    /// Takes `timer` out of the heap or the parked list; it stays valid. Loop thread only.
    func unschedule(_ timer: LoopTimer) {
        switch timer.state {
        case .scheduled: timerTable.remove(timer)
        case .parked: timerTable.removeParked(timer)
        case .idle, .due, .firing: break
        }
        timer.state = .idle
    }

    /// Moves `timer`'s next fire time: at once on the loop's thread, else before its next pass (waking it). Answers
    /// whether the loop took the move; `false` once its thread exited or is exiting (the time is then set here, for
    /// the loop the timer joins next). A move that reaches the loop after the one-shot timer fired is void (as in CF).
    /// Any thread.
    func reschedule(_ timer: LoopTimer, at fireTime: Int64) -> Bool {
        if isCurrent {
            move(timer, to: fireTime)
            return true
        }
        return post(fireTime, for: timer) { [self] in move(timer, to: fireTime) }
    }

    /// Sends `change`, which sets `timer`'s fire time on the loop's thread, from another thread; answers whether the
    /// loop took it. The loop's thread exited, or its inbox closed for the teardown (a change queued before that is
    /// still applied): the timer is in no heap and will be in no mode, so the new time is set here and kept for the
    /// loop it joins next, and the caller is told.
    private func post(_ fireTime: Int64, for timer: LoopTimer, _ change: @escaping @Sendable () -> Void) -> Bool {
        guard !isTerminated else {
            timer.fireTime = fireTime
            return false
        }
        switch inbox.post(change: change) {
        case .refused:
            timer.fireTime = fireTime
            return false
        case .queuedFirst:
            poller.wakeIfSleeping()
            return true
        case .queuedBehind:
            return true
        }
    }

    /// ``reschedule(_:at:)``'s work on the loop's thread.
    private func move(_ timer: LoopTimer, to fireTime: Int64) {
        guard timer.isValid else { return }
        unschedule(timer)
        timer.fireTime = fireTime
        if timer.isInAnyMode { schedule(timer) }
    }

    /// Puts a spent one-shot timer that `setNextFireTime` just revived back in the modes it was in, for `fireTime`, on
    /// the loop's thread (nothing happens there if it was invalidated meanwhile). Answers whether the loop took the
    /// re-arm; `false` once its thread exited or is exiting: the timer is valid then, in no mode, and the new time is
    /// set here, never lost, for the loop it joins next. Any thread.
    func rearm(_ timer: LoopTimer, at fireTime: Int64) -> Bool {
        if isCurrent {
            rejoin(timer, at: fireTime)
            return true
        }
        return post(fireTime, for: timer) { [self] in rejoin(timer, at: fireTime) }
    }

    /// ``rearm(_:at:)``'s work on the loop's thread.
    private func rejoin(_ timer: LoopTimer, at fireTime: Int64) {
        guard timer.isValid else { return }
        unschedule(timer)
        timer.fireTime = fireTime
        if let former = timer.formerModes, former.loop == ObjectIdentifier(self) {
            if former.wasCommon { join(.timer(timer), to: .common) }
            former.memberships.forEach { addToMode(.timer(timer), modeTable[$0.modeID]) }
        }
        timer.formerModes = nil
        if timer.isInAnyMode, timer.state == .idle { schedule(timer) }
    }

    /// A one-shot timer that fired on its own: out of every mode, invalid until re-armed, its modes remembered for
    /// ``rearm(_:at:)``. Loop thread only.
    private func spend(_ timer: LoopTimer) {
        // If `invalidate()` won the race from another thread, its own detach is on its way.
        guard timer.markSpent() else { return }
        timer.formerModes = LoopTimer.FormerModes(
            loop: ObjectIdentifier(self), memberships: timer.memberships, wasCommon: timer.isCommon)
        detachNow(.timer(timer))
    }

    /// Forgets `mode` among the modes a spent one-shot timer rejoins when re-armed: the timer was removed from it
    /// after it fired. Loop thread only.
    func forgetFormerMode(_ mode: Mode, of timer: LoopTimer) {
        guard var former = timer.formerModes else { return }
        if mode == .common {
            former.wasCommon = false
        } else if let state = existingMode(named: mode) {
            _ = former.memberships.remove(modeID: state.id)
        }
        timer.formerModes = former
    }

    /// Arms the timerfd for the earlier of the first timer's or callback's latest fire time and `deadline`; answers
    /// false, arming nothing, when that time has come or is closer than ``sleepHorizon`` (so the loop polls instead of
    /// sleeping).
    /// Real time only: a loop on virtual time never arms its timerfd (``waitForEventsVirtually(_:poll:)``).
    func armTimer(until deadline: Int64) -> Bool {
        let wakeTime = min(timerTable.firstLatestFireTime ?? .max, deadline)
        guard wakeTime != .max else { return true }
        let now = MonotonicClock.now()
        guard wakeTime - now > Self.sleepHorizon else { return false }
        poller.arm(for: wakeTime, now: now)
        return true
    }

    /// How soon a wake-up must be for the loop to poll its way to it instead of sleeping: 20 µs. Arming the timerfd
    /// for a time that becomes the CPU's earliest timer costs 12–14 µs on a KVM guest (the shared benchmark notes),
    /// and the timer interrupt and the wake-up after it cost as much again, so sleeping for less than that is slower
    /// than polling and fires later. A loop with timers this dense (a backlog of due timers, a 10 µs repeating timer)
    /// polls `epoll_wait` without blocking until the time comes; descriptors and other threads' work are still seen
    /// on every poll. CF always sleeps.
    static let sleepHorizon: Int64 = 20_000

    /// Step 9a: fires the running mode's due timers and callbacks, in order of latest fire time (fire time when no
    /// tolerance), then of scheduling, whatever their kind.
    ///
    /// Due timers and callbacks of modes not running are parked until one of their modes runs. A repeating timer is
    /// put back on its grid after its handler; a one-shot timer is spent (invalid, out of its modes, until re-armed).
    /// Everything due when the pass looked fires in this pass; what a handler schedules for now waits for the next
    /// one. As the heap is ordered by latest fire time, taking stops at the first entry not yet due.
    func fireDueTimers() {
        guard let state = runStack.mode else { return }
        let next = timerTable.firstFireTime
        guard next != .max else { return }
        let now = clockNow()
        guard next <= now else { return }
        var due = scratch.timers.take()
        repeat {
            let entry = timerTable.takeFirstAsDue()
            if entry.isTimer {
                entry.timerReference._withUnsafeGuaranteedRef { timer in
                    if timer.isIn(modeID: state.id) {
                        timer.state = .due
                        // Retained while listed: a handler may take an earlier one out of its modes, which held it.
                        _ = entry.timerReference.retain()
                        due.append(entry)
                    } else {
                        timer.state = .parked
                        timerTable.park(entry)
                    }
                }
            } else if callbackRuns(modeID: timerTable.modeID(of: entry), in: state) {
                due.append(entry)
            } else {
                timerTable.park(entry)
            }
        } while timerTable.firstFireTime <= now
        for index in due.indices {
            let entry = due[index]
            if entry.isTimer {
                entry.timerReference._withUnsafeGuaranteedRef { fire($0, in: state) }
                entry.timerReference.release()  // The timer may go now, if nothing else holds it.
            } else {
                fire(callback: entry)
            }
        }
        scratch.timers.give(&due)
    }

    /// Puts back in the heap each parked timer and callback that runs in `state` (the others keep their place): a
    /// timer is scheduled afresh (a new sequence), a callback keeps its key. Loop thread only.
    func resumeParkedTimers(in state: ModeState) {
        var index = 0
        while index < timerTable.parked.count {
            let entry = timerTable.parked[index]
            guard runs(entry, in: state) else {
                index += 1
                continue
            }
            timerTable.parked.remove(at: index)
            if entry.isTimer {
                schedule(entry.timerReference.takeUnretainedValue())
            } else {
                timerTable.unpark(callback: entry)
            }
        }
    }

    /// Whether the timer or callback `entry` names may fire in a run of `state`: the one mode test of both kinds (a
    /// timer by its memberships, a callback by its slot's mode id).
    private func runs(_ entry: TimerEntry, in state: ModeState) -> Bool {
        if entry.isTimer { return entry.timerReference._withUnsafeGuaranteedRef { $0.isIn(modeID: state.id) } }
        return callbackRuns(modeID: timerTable.modeID(of: entry), in: state)
    }

    private func fire(_ timer: LoopTimer, in state: ModeState) {
        guard timer.state == .due else { return }  // Rescheduled, removed or invalidated meanwhile.
        guard timer.isValid else {
            timer.state = .idle
            return
        }
        // An earlier handler of this pass took the timer out of the running mode but not out of all its modes
        // (CF fires it anyway): it waits, due, for one of its modes to run.
        guard timer.isIn(modeID: state.id) else {
            timer.state = .parked
            timerTable.park(TimerEntry(timer))
            return
        }
        if timer.appliedRateLimiter != nil && rateLimitHoldsBack(timer) { return }
        timer.state = .firing
        MetricsKeeper.bump(metricsKeeper.timersFired)
        recordTimerLateness(fireTime: timer.fireTime)
        let token = recordCalloutStart(.timer, at: timer.callSite)
        timer.handler(timer)
        recordCalloutEnd(token)
        guard timer.state == .firing else { return }  // The handler rescheduled or invalidated it.
        if !timer.repeats {
            timer.state = .idle
            spend(timer)
        } else if !timer.isInAnyMode {
            timer.state = .idle
        } else {
            timer.fireTime = nextGridTime(after: timer.fireTime, interval: timer.intervalNanoseconds)
            schedule(timer)
        }
    }

    /// Runs a due callback unless an earlier handler of this pass cancelled it; its slot is free before it runs.
    private func fire(callback entry: TimerEntry) {
        var callback = CallbackSlots.Stored.nothing
        guard let slot = timerTable.takeForFiring(entry, callback: &callback) else { return }
        callbackEnded(slot)
        MetricsKeeper.bump(metricsKeeper.callbacksRun)
        let token = recordCalloutStart(.callback, at: timerTable.callbacks.site(ofSlot: entry.slot))
        callback.run()
        recordCalloutEnd(token)
    }

    /// The first time on `fired + k * interval` (k >= 1) that is later than now: missed fire times are skipped.
    private func nextGridTime(after fired: Int64, interval: Int64) -> Int64 {
        let now = clockNow()
        guard fired <= now else { return fired.addingSaturating(interval) }
        let missed = (now - fired) / interval + 1
        let (offset, overflow) = missed.multipliedReportingOverflow(by: interval)
        return overflow ? .max : fired.addingSaturating(offset)
    }

    /// Stores a callback in the timer table for `fireTime` in `mode` (`nil`: the default mode) and counts it in that
    /// mode's keep-alive count; answers its slot and generation. Inlined: a call that schedules in the default mode
    /// then folds the mode test away (out of line, W3f's scheduling took 55 instructions more a callback). Loop
    /// thread only.
    @inline(__always)
    func insertCallback(
        fireTime: Int64,
        tolerance: Int64,
        mode: Mode?,
        remoteID: UInt64,
        site: CallSite,
        _ callback: consuming CallbackSlots.Stored
    ) -> (slot: Int32, generation: UInt32) {
        let modeID: Int32
        if mode == nil || mode == .default {  // `nil`: the default mode, without a name to compare.
            modeID = 0  // The loop's first mode, made with it.
        } else if mode == .common {
            modeID = CallbackSlots.commonModeID
        } else {
            modeID = Int32(self.mode(named: mode.unsafelyUnwrapped).id)
        }
        countCallback(inMode: modeID, by: 1)
        let sequence = timerTable.takeSequence()
        defer { noteLocalWork() }
        return timerTable.insertCallback(
            fireTime: fireTime, latestFireTime: fireTime.addingSaturating(tolerance), sequence: sequence,
            modeID: modeID, remoteID: remoteID, site: site, callback: callback)
    }

    func slotAndGeneration(of callback: ScheduledCallback) -> (Int32, UInt32)? {
        if callback.slot >= 0 { return (callback.slot, UInt32(truncatingIfNeeded: callback.key)) }
        guard let found = timerTable.remoteCallbacks[callback.key] else { return nil }
        return (found.slot, found.generation)
    }

    func cancelNow(_ callback: ScheduledCallback) {
        guard let (slot, generation) = slotAndGeneration(of: callback) else { return }
        var released = CallbackSlots.Stored.nothing
        guard let state = timerTable.cancel(slot: slot, generation: generation, released: &released) else {
            return
        }
        callbackEnded(state)
        // `released` goes out of scope here, after the table is consistent again.
    }

    /// Books a callback's end (fired or cancelled): its mode's keep-alive count, and its remote id.
    func callbackEnded(_ state: CallbackSlots.Ending) {
        countCallback(inMode: state.modeID, by: -1)
        if state.remoteID != 0 { timerTable.remoteCallbacks[state.remoteID] = nil }
    }

    /// Scheduled callbacks keep runs of their mode going: they count in its keep-alive count (or, for the common
    /// modes, in ``commonCallbackCount``).
    private func countCallback(inMode modeID: Int32, by delta: Int) {
        if modeID == CallbackSlots.anyModeID {
            return  // The loop's own: keeps nothing alive.
        } else if modeID == CallbackSlots.commonModeID {
            timerTable.commonCallbackCount += delta
        } else {
            modeTable.list[Int(modeID)].adjustKeepAliveCount(by: delta)
        }
    }

    /// Whether the callback of mode `modeID` may fire in a run of `state`.
    func callbackRuns(modeID: Int32, in state: ModeState) -> Bool {
        guard modeID < 0 else { return modeID == Int32(state.id) }
        return modeID == CallbackSlots.anyModeID || state.isCommon
    }
}
