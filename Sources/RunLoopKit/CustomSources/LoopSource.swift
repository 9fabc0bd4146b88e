import Synchronization

/// A custom source (CF's version 0 source): work that any thread can signal and the loop performs.
///
/// Signals coalesce: however many ``signal()`` calls arrive before the loop gets to the source, its perform
/// handler runs once. Among several signalled sources the loop performs lower ``LoopItem/order`` first, then earlier signals.
///
/// Threading: ``signal()``, ``LoopItem/invalidate()`` and ``LoopItem/isValid`` are safe from any thread. All three handlers run
/// on the loop's thread. A source belongs to at most one loop (it may sit in several of that loop's modes).
///
/// Differences from CF: ``signal()`` also wakes the loop if it sleeps (CF needs a separate `CFRunLoopWakeUp`),
/// and the schedule and cancel handlers run on the loop's thread (CF runs them on whichever thread adds or
/// removes), so they never race the perform handler.
public final class LoopSource: LoopItem, LoopEventItem, @unchecked Sendable {
    // Unchecked Sendable: see `queued` and `nextSignalled`.
    let performHandler: @Sendable (LoopSource) -> Void
    let scheduleHandler: (@Sendable (Loop, Loop.Mode) -> Void)?
    let cancelHandler: (@Sendable (Loop, Loop.Mode) -> Void)?

    /// Set by `signal()`, cleared by the loop just before it calls perform.
    let signalled = Atomic<Bool>(false)
    /// Link in the owner's lock-free stack of newly signalled sources; written before the push publishes it.
    nonisolated(unsafe) var nextSignalled: Unmanaged<LoopSource>?
    /// Whether the source sits in the owner's sorted list of signalled sources. Loop thread only.
    nonisolated(unsafe) var queued = false

    /// Creates a source whose perform handler is handed the source itself, so it can invalidate or re-signal it
    /// without keeping a reference of its own (as every item's handler is handed its item).
    ///
    /// - Parameters:
    ///   - order: Lower orders are performed first within a pass. Default 0.
    ///   - schedule: Called on the loop's thread each time the source is added to one of its modes, with that mode.
    ///   - cancel: Called on the loop's thread each time the source leaves a mode (removed, invalidated, or its
    ///     loop's thread exited), with that mode.
    ///   - perform: Called on the loop's thread with the source, once per signalled state, in a mode it is in.
    ///   - file: Where the source is made, for the flight recorder (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``);
    ///     leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    public init(
        order: Int = 0,
        schedule: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        cancel: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        perform: @escaping @Sendable (LoopSource) -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        self.scheduleHandler = schedule
        self.cancelHandler = cancel
        self.performHandler = perform
        super.init(kind: .source, order: order, file: file, line: line)
    }

    /// Marks the source signalled and wakes its loop if that loop is asleep. Safe from any thread.
    ///
    /// Costs one atomic exchange when the source is already signalled, and a few atomics otherwise; the eventfd
    /// is written only when the loop sleeps, and at most once per sleep. Signalling an invalidated source does
    /// nothing, as CF's `CFRunLoopSourceSignal`. A source signalled before it is added to a loop is performed once it is.
    public func signal() {
        guard isValid else { return }
        guard !signalled.exchange(true, ordering: .sequentiallyConsistent) else { return }
        guard let loop = owner else { return }
        loop.enqueueSignalled(self)
    }

    /// Whether the source is signalled and not yet performed. Safe from any thread; the answer may be stale.
    public var isSignalled: Bool { signalled.load(ordering: .relaxed) }

}
