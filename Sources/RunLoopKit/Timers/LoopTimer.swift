import Synchronization

/// A one-shot or repeating timer on a loop's monotonic clock (CF's run-loop timer).
///
/// A timer fires no earlier than its fire time and, when the loop is free, no later than fire time plus
/// ``tolerance``; the loop uses that slack to serve several timers with one wake-up. A repeating timer whose
/// fire times were missed (a long callout, a mode that was not running) fires once and then keeps to its
/// original grid: missed times are skipped, never piled up.
///
/// A one-shot timer that fired leaves its modes and is invalid (``LoopItem/isValid`` is false), as in CF, so a run
/// whose mode holds only fired one-shot timers returns ``Loop/RunResult/finished``. Unlike CF, it is not dead:
/// ``setNextFireTime(_:)`` re-arms it, from any thread, and it rejoins every mode it was in (the common modes
/// included) and fires once more at the new time. Only ``LoopItem/invalidate()`` ends a timer for good.
///
/// Threading: ``setNextFireTime(_:)``, ``LoopItem/invalidate()``, ``nextFireTime`` and ``LoopItem/isValid`` are safe from any
/// thread; the handler runs on the loop's thread. A timer belongs to at most one loop, in any number of its modes.
///
/// Differences from CF: the tolerance is honoured (CF on Linux ignores it), and a one-shot timer can be re-armed
/// from inside its handler and after it fired (CF ignores both), so one timer object serves a timeout that is armed
/// again and again (a guest loop's next timeout, a request's deadline) without making a timer per arming: re-arming a
/// kept timer costs about a third of making, adding and invalidating a new one (no allocation, no binding; the
/// W4r figures in Docs/Benchmarks.md).
public final class LoopTimer: LoopItem, LoopEventItem, @unchecked Sendable {
    // Unchecked Sendable: the mutable fields are loop-thread confined.
    /// The longest interval or tolerance accepted: CF's limit, about 16 years.
    public static let maximumInterval: Duration = .seconds(504_911_232)

    // Loop-thread confined, and first: the small fields: they share a word with the end of ``LoopItem``'s.
    nonisolated(unsafe) var state = State.idle
    /// The timer's index in the loop's timer heap while it is scheduled, else -1.
    nonisolated(unsafe) var heapIndex: Int32 = -1

    let handler: @Sendable (LoopTimer) -> Void
    /// The repeat interval in nanoseconds (at least 1), or 0 for a one-shot timer.
    let intervalNanoseconds: Int64
    let toleranceNanoseconds: Int64
    /// The next fire time in monotonic nanoseconds; written on the loop's thread (or before the timer is added).
    private let fireTimeStorage: Atomic<Int64>

    enum State: UInt8 {
        /// In no heap: never added, removed from every mode, or invalidated.
        case idle
        /// In the owner's heap.
        case scheduled
        /// Taken from the heap by the pass about to fire it.
        case due
        /// Its handler is running.
        case firing
        /// Due while none of its modes was running; waits for one of them.
        case parked
    }

    // Loop-thread confined state.
    /// Tie-breaker among equal fire times: insertion order.
    nonisolated(unsafe) var sequence: UInt64 = 0
    /// Fire time plus tolerance: the heap key and the latest time the loop must wake for it.
    nonisolated(unsafe) var latestFireTime: Int64 = 0
    /// While a one-shot timer is spent (it fired on its own): the modes it was in, rejoined when it is re-armed.
    nonisolated(unsafe) var formerModes: FormerModes? = nil

    /// The repeat interval, or `nil` for a one-shot timer. The loop keeps it in whole nanoseconds (at least one),
    /// and this is that value.
    public var interval: Duration? { intervalNanoseconds > 0 ? .nanoseconds(intervalNanoseconds) : nil }
    /// How late the timer may fire to share a wake-up with others (clamped to half the interval when repeating), in
    /// whole nanoseconds.
    public var tolerance: Duration { .nanoseconds(toleranceNanoseconds) }

    /// Creates a timer that first fires at `fireTime`.
    ///
    /// A fire time in the past makes the timer fire as soon as it is added to a running mode.
    /// - Parameters:
    ///   - fireTime: The first fire time.
    ///   - interval: The repeat interval; `nil` for a one-shot timer.
    ///   - tolerance: How late the timer may fire; `nil` (the default) for none, as Swift's `Clock.sleep` takes it.
    ///   - order: Shown in descriptions; does not affect firing order (as in CF).
    ///   - handler: Called on the loop's thread with the timer.
    ///   - file: Where the timer is made, for the flight recorder (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``);
    ///     leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Throws: ``LoopError/Code/invalidInterval`` for an interval that is zero, negative or above
    ///   ``maximumInterval``; ``LoopError/Code/invalidTolerance`` for a negative or too large tolerance.
    public init(
        at fireTime: Loop.Instant,
        repeating interval: Duration? = nil,
        tolerance: Duration? = nil,
        order: Int = 0,
        handler: consuming @escaping @Sendable (LoopTimer) -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) {
        var intervalNanoseconds: Int64 = 0
        if let interval {
            guard interval > .zero && interval <= Self.maximumInterval else {
                throw LoopError(
                    .invalidInterval, message: "a repeat interval must be in (0, 16 years], got \(interval)")
            }
            intervalNanoseconds = max(interval.saturatingNanoseconds, 1)
        }
        var toleranceNanoseconds = try Self.checkedNanoseconds(ofTolerance: tolerance)
        if intervalNanoseconds > 0 { toleranceNanoseconds = min(toleranceNanoseconds, intervalNanoseconds / 2) }
        self.handler = handler
        self.intervalNanoseconds = intervalNanoseconds
        self.toleranceNanoseconds = toleranceNanoseconds
        self.fireTimeStorage = Atomic(fireTime.nanoseconds)
        super.init(kind: .timer, order: order, file: file, line: line)
    }

    /// Creates a timer that first fires `delay` from now, as ``Loop/Instant/now`` reads it on the calling thread (the
    /// thread's loop's time when that loop is on virtual time); see
    /// ``init(at:repeating:tolerance:order:handler:file:line:)``. For a loop on virtual time, from another thread:
    /// `LoopTimer(at: loop.now + delay)`.
    public convenience init(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration? = nil,
        order: Int = 0,
        handler: consuming @escaping @Sendable (LoopTimer) -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) {
        try self.init(
            at: .now + delay,
            repeating: interval,
            tolerance: tolerance,
            order: order,
            handler: handler,
            file: file,
            line: line
        )
    }

    /// `tolerance` in nanoseconds (0 for `nil`), once checked: what timers and one-shot callbacks accept.
    /// - Throws: ``LoopError/Code/invalidTolerance`` for a negative tolerance or one above ``maximumInterval``.
    @inline(__always)
    static func checkedNanoseconds(ofTolerance tolerance: Duration?) throws(LoopError) -> Int64 {
        // The common case, no tolerance, is told without `Duration`'s out-of-line calls.
        guard let tolerance, !tolerance.isZero else { return 0 }
        guard tolerance > .zero && tolerance <= maximumInterval else {
            throw LoopError(.invalidTolerance, message: "a tolerance must be in [0, 16 years], got \(tolerance)")
        }
        return tolerance.saturatingNanoseconds
    }

    /// The next time the timer will fire (inside its handler: the time being fired). Safe from any thread.
    public var nextFireTime: Loop.Instant { Loop.Instant(nanoseconds: fireTime) }

    var fireTime: Int64 {
        get { fireTimeStorage.load(ordering: .relaxed) }
        set { fireTimeStorage.store(newValue, ordering: .relaxed) }
    }

    /// Whether the timer repeats.
    public var repeats: Bool { intervalNanoseconds > 0 }

    /// Moves the next fire time to `fireTime`, or re-arms a one-shot timer that fired; answers whether the timer's
    /// loop took the change. Safe from any thread.
    ///
    /// On a timer that is waiting to fire (or repeating) it moves the next firing; from inside the handler it also
    /// re-arms a one-shot timer. On a one-shot timer that fired (``LoopItem/isValid`` is false, the timer was not
    /// invalidated) it re-arms it: the timer is valid again at once, rejoins every mode it was in when it fired (the
    /// common modes included, minus any it was removed from since) and fires once more at `fireTime`. On another
    /// thread than the loop's, the change reaches the loop before its next pass, and the loop is woken to make it.
    ///
    /// What the caller saw decides: a call made while a one-shot timer is still waiting moves that one firing. If the
    /// loop fires the timer before such a call from another thread reaches it, the move is void (as in CF): the timer
    /// fired once, and stays spent until re-armed again.
    ///
    /// - Parameter fireTime: The new fire time; one in the past fires in the loop's next pass of one of its modes.
    /// - Returns: `true` when the change is the timer's: made or queued on its live loop, or kept for the first `add`
    ///   of a timer that is in no loop yet. `false` when nothing will fire it at `fireTime` where it is: the timer was
    ///   invalidated (the call is ignored), or its loop's thread has exited or is exiting, a race the call may lose
    ///   (the timer is then valid and in no mode, as every item of that loop, and keeps `fireTime` for another loop
    ///   it may be added to; a re-arm is never lost to the race).
    @discardableResult
    public func setNextFireTime(_ fireTime: Loop.Instant) -> Bool {
        guard let loop = owner else {
            guard isValid else { return false }
            self.fireTime = fireTime.nanoseconds
            return true
        }
        if reviveIfSpent() { return loop.rearm(self, at: fireTime.nanoseconds) }
        guard isValid else { return false }
        return loop.reschedule(self, at: fireTime.nanoseconds)
    }

}

extension LoopTimer {
    /// The modes a spent one-shot timer was in when it fired, for the loop it fired in. Loop thread only.
    struct FormerModes {
        /// The loop the timer fired in: a timer that later joins another loop (its loop's thread exited) must not
        /// rejoin these mode ids there.
        let loop: ObjectIdentifier
        /// Its memberships when it fired (the slots are stale; only the mode ids count).
        var memberships: LoopItem.Memberships
        /// Whether it had been added to the common pseudo-mode.
        var wasCommon: Bool
    }
}
