/// A callback at chosen activities of a loop's runs and passes (CF's run-loop observer).
///
/// Among observers of the same activity the loop calls lower ``order`` first (equal orders in the order they
/// were added). Observers alone never keep a mode running: a mode with only observers is empty.
///
/// Threading: ``invalidate()`` and ``LoopItem/isValid`` are safe from any thread; the handler runs on the loop's
/// thread. An observer belongs to at most one loop.
public final class LoopObserver: LoopItem, @unchecked Sendable {  // Unchecked: `isFiring` is loop-thread confined.
    /// The activities the observer is called at.
    public let activities: Loop.Activity
    /// Whether the observer stays after its first call (false: invalidated right after it).
    public let repeats: Bool
    /// Lower orders are called first.
    public let order: Int

    let handler: @Sendable (LoopObserver, Loop.Activity) -> Void
    /// True while the handler runs, so nested runs skip it (as CF does). Loop thread only.
    nonisolated(unsafe) var isFiring = false

    /// Creates an observer.
    ///
    /// - Parameters:
    ///   - activities: When to call the handler.
    ///   - repeats: `false` for an observer that is invalidated after its first call.
    ///   - order: Lower orders are called first. Default 0.
    ///   - handler: Called on the loop's thread with the activity being observed.
    public convenience init(
        activities: Loop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        handler: @escaping @Sendable (Loop.Activity) -> Void
    ) {
        self.init(activities: activities, repeats: repeats, order: order) { _, activity in handler(activity) }
    }

    /// Creates an observer whose handler is handed the observer itself, so it can invalidate itself without keeping
    /// a reference of its own (as a timer's handler is handed its timer).
    ///
    /// - Parameters:
    ///   - activities: When to call the handler.
    ///   - repeats: `false` for an observer that is invalidated after its first call.
    ///   - order: Lower orders are called first. Default 0.
    ///   - handler: Called on the loop's thread with the observer and the activity being observed.
    public init(
        activities: Loop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        handler: @escaping @Sendable (LoopObserver, Loop.Activity) -> Void
    ) {
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.handler = handler
    }

    /// Removes the observer from every mode of its loop for good. Safe from any thread.
    ///
    /// After it returns no new call starts.
    public func invalidate() {
        guard markInvalid() else { return }
        withOwner { $0.detachEverywhere(.observer(self)) }
    }
}
