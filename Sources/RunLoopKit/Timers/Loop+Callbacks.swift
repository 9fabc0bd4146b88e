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
    /// A one-shot callback scheduled with ``Loop/schedule(at:tolerance:in:_:file:line:)``: a plain value naming it, to pass to
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
    ///
    /// `file` and `line` name the call site in the loop's flight recording (``flightRecording()``); leave their
    /// defaults. They cost nothing until the recorder is first enabled, and the callback's slot does not grow.
    /// - Returns: The value naming the callback, for ``cancel(_:)``.
    /// - Throws: ``LoopError/Code/invalidTolerance`` for a negative tolerance or one above
    ///   ``LoopTimer/maximumInterval``; ``LoopError/Code/loopTerminated`` once the loop's thread has exited (or
    ///   for a loop made before `fork()`, in the child).
    @inlinable @discardableResult
    public func schedule(
        at fireTime: Instant,
        tolerance: Duration? = nil,
        in mode: Mode = .default,
        _ callback: consuming @escaping @Sendable () -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) -> ScheduledCallback {
        // Inlined where it is called: a call that leaves the defaults is known at compile time to need no tolerance
        // check and no mode lookup, and costs what an overload without them did.
        let site = CallSite(file: file, line: line)
        if tolerance == nil && mode.name == Mode.default.name {
            return try scheduleInDefaultMode(at: fireTime.nanoseconds, site: site, callback)
        }
        return try scheduleInMode(at: fireTime, tolerance: tolerance, in: mode, site: site, callback)
    }

    /// ``schedule(at:tolerance:in:_:file:line:)`` without a tolerance, in the default mode.
    @usableFromInline
    func scheduleInDefaultMode(
        at fireNanoseconds: Int64,
        site: CallSite,
        _ callback: consuming @escaping @Sendable () -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try schedule(at: fireNanoseconds, tolerance: 0, in: nil, site: site, CallbackSlots.Stored(callback))
    }

    /// ``schedule(at:tolerance:in:_:file:line:)`` with a tolerance or in another mode.
    @usableFromInline
    func scheduleInMode(
        at fireTime: Instant,
        tolerance: Duration?,
        in mode: Mode,
        site: CallSite,
        _ callback: consuming @escaping @Sendable () -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try scheduleChecked(at: fireTime, tolerance: tolerance, in: mode, site: site, CallbackSlots.Stored(callback))
    }

    /// Schedules a call of `function(argument)` once on the loop's thread at `fireTime` (or up to `tolerance`
    /// later), in `mode` (or whichever common mode runs, for ``Mode/common``); like
    /// ``schedule(at:tolerance:in:_:file:line:)`` in every other respect: same order, errors and cancelling. Safe from any
    /// thread.
    ///
    /// The allocation-free form, as ``perform(in:with:_:file:line:)`` is for blocks: a closure that captures anything has a
    /// context that is allocated when it is scheduled and freed when it ran (most of what scheduling costs); a C
    /// function pointer captures nothing (the compiler refuses a closure that would), and `argument` is one word
    /// the loop keeps in the callback's slot: an index into a table of yours, or the bits of an `Unmanaged`
    /// reference. libuv's `uv_timer_t` carries its `data` pointer the same way. On the loop's thread nothing is
    /// allocated once the loop's table has grown to the number of callbacks alive at once; from another thread
    /// the request travels to the loop as the closure form's does.
    /// - Returns: The value naming the callback, for ``cancel(_:)``.
    /// - Throws: ``LoopError/Code/invalidTolerance`` for a negative tolerance or one above
    ///   ``LoopTimer/maximumInterval``; ``LoopError/Code/loopTerminated`` once the loop's thread has exited (or
    ///   for a loop made before `fork()`, in the child).
    @inlinable @discardableResult
    public func schedule(
        at fireTime: Instant,
        tolerance: Duration? = nil,
        in mode: Mode = .default,
        with argument: Int,
        _ function: @convention(c) (Int) -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) -> ScheduledCallback {
        let site = CallSite(file: file, line: line)
        if tolerance == nil && mode.name == Mode.default.name {  // Known where inlined; see the closure form.
            return try scheduleInDefaultMode(at: fireTime.nanoseconds, site: site, with: argument, function)
        }
        return try scheduleInMode(at: fireTime, tolerance: tolerance, in: mode, site: site, with: argument, function)
    }

    /// ``schedule(at:tolerance:in:with:_:file:line:)`` without a tolerance, in the default mode.
    @usableFromInline
    func scheduleInDefaultMode(
        at fireNanoseconds: Int64,
        site: CallSite,
        with argument: Int,
        _ function: @convention(c) (Int) -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try schedule(
            at: fireNanoseconds, tolerance: 0, in: nil, site: site,
            CallbackSlots.Stored(function: function, argument: argument))
    }

    /// ``schedule(at:tolerance:in:with:_:file:line:)`` with a tolerance or in another mode.
    @usableFromInline
    func scheduleInMode(
        at fireTime: Instant,
        tolerance: Duration?,
        in mode: Mode,
        site: CallSite,
        with argument: Int,
        _ function: @convention(c) (Int) -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try scheduleChecked(
            at: fireTime, tolerance: tolerance, in: mode, site: site,
            CallbackSlots.Stored(function: function, argument: argument))
    }

    /// Schedules a call of `function(argument)` once `delay` from the loop's time now (``now``: virtual on a loop on
    /// virtual time); see ``schedule(at:tolerance:in:with:_:file:line:)``. Safe from any thread.
    @inlinable @discardableResult
    public func schedule(
        after delay: Duration,
        tolerance: Duration? = nil,
        in mode: Mode = .default,
        with argument: Int,
        _ function: @convention(c) (Int) -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) -> ScheduledCallback {
        try schedule(at: now + delay, tolerance: tolerance, in: mode, with: argument, function, file: file, line: line)
    }

    /// Both forms of ``schedule(at:tolerance:in:_:file:line:)`` with a tolerance or another mode: checks the tolerance.
    private func scheduleChecked(
        at fireTime: Instant,
        tolerance: Duration?,
        in mode: Mode,
        site: CallSite,
        _ callback: consuming CallbackSlots.Stored
    ) throws(LoopError) -> ScheduledCallback {
        let toleranceNanoseconds = try LoopTimer.checkedNanoseconds(ofTolerance: tolerance)
        return try schedule(at: fireTime.nanoseconds, tolerance: toleranceNanoseconds, in: mode, site: site, callback)
    }

    /// Every form of ``schedule(at:tolerance:in:_:file:line:)``, with a checked tolerance; `mode` `nil` for the default mode.
    @inline(__always)
    private func schedule(
        at fireNanoseconds: Int64,
        tolerance toleranceNanoseconds: Int64,
        in mode: Mode?,
        site: CallSite,
        _ callback: consuming CallbackSlots.Stored
    ) throws(LoopError) -> ScheduledCallback {
        guard !isTerminated else { throw terminatedLoopError }  // A parent's loop in a fork() child included.
        if isCurrent {
            let (slot, generation) = insertCallback(
                fireTime: fireNanoseconds, tolerance: toleranceNanoseconds, mode: mode, remoteID: 0, site: site,
                callback)
            return ScheduledCallback(loopSerial: identity.serial, slot: slot, key: UInt64(generation))
        }
        let id = TimerTable.remoteCallbackIDs.add(1, ordering: .relaxed).newValue
        let carried = UncheckedCallback(callback)
        let posting = inbox.post(change: { [self, toleranceNanoseconds] in
            let (slot, generation) = insertCallback(
                fireTime: fireNanoseconds, tolerance: toleranceNanoseconds, mode: mode, remoteID: id, site: site,
                carried.callback)
            timerTable.remoteCallbacks[id] = (slot, generation)
        })
        guard posting != .refused else { throw LoopError(.loopTerminated, message: "the loop's thread has exited") }
        if posting == .queuedFirst { poller.wakeIfSleeping() }
        return ScheduledCallback(loopSerial: identity.serial, slot: -1, key: id)
    }

    /// Schedules `callback` to run once `delay` from the loop's time now (``now``: virtual on a loop on virtual
    /// time); see ``schedule(at:tolerance:in:_:file:line:)``. Safe from any thread.
    @inlinable @discardableResult
    public func schedule(
        after delay: Duration,
        tolerance: Duration? = nil,
        in mode: Mode = .default,
        _ callback: consuming @escaping @Sendable () -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) -> ScheduledCallback {
        try schedule(at: now + delay, tolerance: tolerance, in: mode, callback, file: file, line: line)
    }

    /// Makes room in the loop's table for `count` one-shot callbacks scheduled at once, so that scheduling up to
    /// that many (either form) neither grows the table nor touches fresh memory. Safe from any thread: on the
    /// loop's thread at once, from another before the loop's next pass.
    ///
    /// Optional: the table grows by itself, doubling, and keeps its size. Call it before a burst whose size you
    /// know (a server's connection timeouts, a batch of deadlines), where a doubling would otherwise copy the whole
    /// table in the middle of the burst and the first use of each new page would fault it in. libuv users own
    /// their `uv_timer_t`s and set them up ahead in the same way. It costs O(`count`) once and the memory stays the
    /// loop's (about 64 bytes per callback: a 40-byte slot and a 24-byte heap entry); a `count` within the current
    /// size does nothing.
    /// - Throws: ``LoopError/Code/invalidArgument`` for a negative `count` or one above `Int32.max`;
    ///   ``LoopError/Code/loopTerminated`` once the loop's thread has exited (or for a loop made before `fork()`,
    ///   in the child).
    public func reserveCallbackCapacity(_ count: Int) throws(LoopError) {
        guard count >= 0 && count <= Int(Int32.max) else {
            throw LoopError(.invalidArgument, message: "a callback capacity must be in [0, Int32.max], got \(count)")
        }
        guard !isTerminated else { throw terminatedLoopError }
        if isCurrent {
            timerTable.reserve(count)
            return
        }
        let posting = inbox.post(change: { [self] in timerTable.reserve(count) })
        guard posting != .refused else { throw LoopError(.loopTerminated, message: "the loop's thread has exited") }
        if posting == .queuedFirst { poller.wakeIfSleeping() }
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

/// A callback on its way to the loop's thread. Sendable by construction: its closure is `@Sendable`, and a C
/// function and a word carry no state.
private struct UncheckedCallback: @unchecked Sendable {
    let callback: CallbackSlots.Stored

    init(_ callback: consuming CallbackSlots.Stored) { self.callback = callback }
}
