/// A `Clock` whose sleeps are a loop's own timers: `Task.sleep(for:tolerance:clock:)`, `clock.measure { }` and any
/// API that takes `some Clock` (a debounce, a retry back-off) then wake up in the loop's passes, in one of its modes,
/// sharing the loop's wake-ups within the tolerance asked for.
///
/// Its instants are ``Loop/Instant``: `CLOCK_MONOTONIC`, the clock of every loop deadline, which does not advance
/// while the machine is suspended and which wall-clock changes never move; or, for a loop on virtual time
/// (``Loop/isVirtual``), that loop's clock, so a sleep ends when the loop's time reaches it (Docs/TestingAndDiagnosing.md). A sleep is a one-shot
/// ``LoopTimer`` added to ``mode`` of ``loop``: it ends when that timer
/// fires in a pass of the mode, so a loop that is not running, or runs another mode, delays it. A cancelled sleep
/// removes its timer at once and throws `CancellationError`. The task resumes on its own executor afterwards (a
/// task that prefers the loop as its task executor, or an actor on the loop, resumes on the loop's thread).
///
/// Threading: a value, safe from any thread and task.
public struct LoopClock: Clock {
    /// The clock's instants: the loop's monotonic time.
    public typealias Instant = Loop.Instant

    /// The loop whose timers measure the sleeps.
    public let loop: Loop
    /// The mode the sleeps' timers are added to.
    public let mode: Loop.Mode

    /// A clock on `loop`'s timers in `mode` (default ``Loop/Mode/default``; ``Loop/Mode/common`` sleeps through
    /// every common mode). Any thread.
    public init(loop: Loop, mode: Loop.Mode = .default) {
        self.loop = loop
        self.mode = mode
    }

    /// The loop's time now (``Loop/now``): the monotonic clock, or the loop's virtual time. Any thread.
    public var now: Loop.Instant { loop.now }

    /// One nanosecond: the timerfd's unit. How close a sleep ends to its deadline depends on the tolerance and on
    /// what the loop is doing, not on this figure.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends the calling task until `deadline`, by a one-shot timer on ``loop`` in ``mode`` that may fire up to
    /// `tolerance` late (`nil`: zero). Any task.
    ///
    /// Unlike `Task.sleep`, the wake-up is one of the loop's own timer events: it comes in the loop's pass order, only
    /// while ``mode`` runs, and shares the loop's wake-ups within `tolerance`. A deadline in the past fires in the
    /// loop's next pass of the mode.
    /// - Throws: `CancellationError` when the task is cancelled (before the call, without touching the loop, or
    ///   during the sleep: its timer is invalidated at once); ``LoopError/Code/loopTerminated`` when the loop's
    ///   thread exits first (or had exited); ``LoopError/Code/invalidTolerance`` for a negative tolerance.
    public func sleep(until deadline: Loop.Instant, tolerance: Duration? = nil) async throws {
        try await LoopWaiter<Void>.waitForItem(on: loop, in: mode) { waiter, dropped throws(LoopError) in
            try LoopTimer(at: deadline, tolerance: tolerance) { _ in
                dropped.keepAlive()
                waiter.finish(.success(()))
            }
        }
    }
}

extension Loop.Instant: InstantProtocol {}

extension Loop {
    /// A clock on this loop's timers in the default mode (see ``LoopClock``). Any thread.
    public var clock: LoopClock { LoopClock(loop: self) }

    /// A clock on this loop's timers in `mode` (see ``LoopClock``). Any thread.
    public func clock(in mode: Mode) -> LoopClock { LoopClock(loop: self, mode: mode) }
}
