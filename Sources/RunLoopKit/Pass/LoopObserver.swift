/// A callback at chosen activities of a loop's runs and passes (CF's run-loop observer).
///
/// Among observers of the same activity the loop calls lower ``LoopItem/order`` first (equal orders in the order they
/// were added). Observers alone never keep a mode running: a mode with only observers is empty.
///
/// Threading: ``LoopItem/invalidate()`` and ``LoopItem/isValid`` are safe from any thread; the handler runs on the loop's
/// thread. An observer belongs to at most one loop.
public final class LoopObserver: LoopItem, @unchecked Sendable {  // Unchecked: `isFiring` is loop-thread confined.
    /// The activities the observer is called at.
    public let activities: Loop.Activity
    /// Whether the observer stays after its first call (false: invalidated right after it).
    public let repeats: Bool

    let handler: @Sendable (LoopObserver, Loop.Activity) -> Void
    /// True while the handler runs, so nested runs skip it (as CF does). Loop thread only.
    nonisolated(unsafe) var isFiring = false

    /// Creates an observer whose handler is handed the observer itself, so it can invalidate itself without keeping
    /// a reference of its own (as every item's handler is handed its item).
    ///
    /// - Parameters:
    ///   - activities: When to call the handler.
    ///   - repeats: `false` for an observer that is invalidated after its first call.
    ///   - order: Lower orders are called first. Default 0.
    ///   - handler: Called on the loop's thread with the observer and the activity being observed.
    ///   - file: Where the observer is made, for the flight recorder (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``);
    ///     leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    public init(
        activities: Loop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        handler: @escaping @Sendable (LoopObserver, Loop.Activity) -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        self.activities = activities
        self.repeats = repeats
        self.handler = handler
        super.init(kind: .observer, order: order, file: file, line: line)
    }

}
