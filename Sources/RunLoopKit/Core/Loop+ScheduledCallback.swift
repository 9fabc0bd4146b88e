import Synchronization

/// One-shot callbacks: the cheap way to run something once at a time on a loop (NIO's `scheduleCallback`, libuv's
/// embedded `uv_timer_t`). No object per callback: the loop keeps it in a reusable slot and answers a small value
/// that names it, so scheduling and cancelling allocate nothing beyond the closure's own context. A ``LoopTimer``
/// is still the tool for a repeating timer, for one that moves (``LoopTimer/setNextFireTime(_:)``), belongs to
/// several modes or should not keep runs alive.
///
/// Firing follows a one-shot ``LoopTimer`` exactly: never before the fire time, at most `tolerance` after it when
/// the loop is free, in order of (fire time + tolerance) with timers and callbacks scheduled at the same time
/// firing in the order scheduled, at step 9 of the pass (``Loop/Activity/beforeTimers`` is announced for them), only
/// while their mode runs (due in another mode, a callback waits for it). A scheduled callback keeps runs of its
/// mode going, like a timer, until it fires or is cancelled.
extension Loop {
    /// A one-shot callback scheduled with ``Loop/schedule(at:tolerance:in:_:)``: a plain value naming it, to pass to
    /// ``Loop/cancel(_:)``. Sendable; copying it costs nothing. A value names one callback only: once that fired or
    /// was cancelled, cancelling it again does nothing, even after its slot was reused.
    public struct ScheduledCallback: Hashable, Sendable {
        /// The loop's ``Loop/serial``: a value of another loop is ignored by this one.
        let loopSerial: UInt32
        /// The callback's slot, or -1 for one scheduled from another thread (then `key` is its id).
        let slot: Int32
        /// The slot's generation, or the id of a callback scheduled from another thread.
        let key: UInt64
    }

    /// Schedules `callback` to run once on the loop's thread at `fireTime` (or up to `tolerance` later), in `mode`
    /// (or whichever common mode runs, for ``Mode/common``). Safe from any thread.
    ///
    /// On the loop's thread this allocates nothing but the closure's context (nothing at all for a closure that
    /// captures nothing, once the loop's table has grown to the number of callbacks alive at once). From another
    /// thread the callback reaches the loop before its next pass, and the loop is woken to arm its timer. A fire
    /// time in the past runs the callback at the next pass of `mode`.
    /// - Returns: The value naming the callback, for ``cancel(_:)``.
    /// - Throws: ``LoopError/Code/invalidTolerance`` for a negative tolerance or one above
    ///   ``LoopTimer/maximumInterval``; ``LoopError/Code/loopTerminated`` once the loop's thread has exited (or
    ///   for a loop made before `fork()`, in the child).
    @discardableResult
    public func schedule(
        at fireTime: Instant,
        tolerance: Duration = .zero,
        in mode: Mode = .default,
        _ callback: @escaping @Sendable () -> Void
    ) throws(LoopError) -> ScheduledCallback {
        var toleranceNanoseconds: Int64 = 0
        if tolerance != .zero {
            guard tolerance > .zero && tolerance <= LoopTimer.maximumInterval else {
                throw LoopError(.invalidTolerance, message: "a tolerance must be in [0, 16 years], got \(tolerance)")
            }
            toleranceNanoseconds = tolerance.saturatingNanoseconds
        }
        guard !isTerminated else { throw terminatedLoopError }  // A parent's loop in a fork() child included.
        let fireNanoseconds = fireTime.nanoseconds
        if isCurrent {
            let (slot, generation) = insertCallback(
                fireTime: fireNanoseconds, tolerance: toleranceNanoseconds, mode: mode, remoteID: 0, callback)
            return ScheduledCallback(loopSerial: identity.serial, slot: slot, key: UInt64(generation))
        }
        let id = TimerTable.remoteCallbackIDs.add(1, ordering: .relaxed).newValue
        let posting = inbox.post(change: { [self, toleranceNanoseconds] in
            let (slot, generation) = insertCallback(
                fireTime: fireNanoseconds, tolerance: toleranceNanoseconds, mode: mode, remoteID: id, callback)
            timerTable.remoteCallbacks[id] = (slot, generation)
        })
        guard posting != .refused else { throw LoopError(.loopTerminated, message: "the loop's thread has exited") }
        if posting == .queuedFirst { poller.wakeIfSleeping() }
        return ScheduledCallback(loopSerial: identity.serial, slot: -1, key: id)
    }

    /// Schedules `callback` to run once `delay` from now; see ``schedule(at:tolerance:in:_:)``. Safe from any thread.
    @discardableResult
    public func schedule(
        after delay: Duration,
        tolerance: Duration = .zero,
        in mode: Mode = .default,
        _ callback: @escaping @Sendable () -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try schedule(at: .now + delay, tolerance: tolerance, in: mode, callback)
    }

    /// Cancels a scheduled callback that has not run yet, releasing its closure. Safe from any thread.
    ///
    /// On the loop's thread the callback will not run once this returns (also when called by another callback or
    /// timer of the same pass). From another thread the cancellation reaches the loop before its next pass, without
    /// waiting for it: a callback already running, or due and fired before that, still runs. (A ``LoopTimer`` can
    /// promise more there, because its `invalidate()` marks the object itself; use one when a cancel from another
    /// thread must stop a firing at once.) A callback that already ran or was cancelled, or one of another loop, is
    /// ignored; so is a cancel sent from another thread to a loop that is ``isTerminated`` (none of its callbacks
    /// will run).
    public func cancel(_ callback: ScheduledCallback) {
        guard callback.loopSerial == identity.serial else { return }
        if isCurrent {
            cancelNow(callback)
        } else if !isTerminated {
            if inbox.post(change: { [self] in cancelNow(callback) }) == .queuedFirst { poller.wakeIfSleeping() }
        }
    }

}
