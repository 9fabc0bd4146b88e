/// The point of a loop's pass at which a phase task runs (see ``PhaseTaskScheduler``).
///
/// A *pass* here is what UI code calls one turn of the event loop: the loop wakes, handles what woke it, and
/// goes back to sleep. The loop announces the two ends with ``Loop/Activity/afterWaiting`` and
/// ``Loop/Activity/beforeWaiting``.
public enum LoopPhase: Hashable, Sendable, CustomStringConvertible {
    /// When the loop next wakes up (``Loop/Activity/afterWaiting``), before it handles the timers, descriptors
    /// and blocks that woke it. Apple-platform dispatchers call it `.nextLoopBegan`.
    case nextPassBegins
    /// When the current pass ends: the loop is about to sleep (``Loop/Activity/beforeWaiting``), or the run is
    /// returning (``Loop/Activity/exit``). Apple-platform dispatchers call it `.currentLoopEnded`: work done here
    /// shows up before the loop sleeps, not one wake-up later.
    case currentPassEnds
    /// When the loop is about to sleep with nothing of the scheduler's left to do: at a
    /// ``Loop/Activity/beforeWaiting`` where no ``currentPassEnds`` task ran and no ``nextPassBegins`` task is
    /// waiting (the loop goes round once more first if some did), or when the run returns. Apple-platform
    /// dispatchers call it `.idle`.
    case idle

    /// The phase's name.
    public var description: String {
        switch self {
        case .nextPassBegins: "nextPassBegins"
        case .currentPassEnds: "currentPassEnds"
        case .idle: "idle"
        }
    }
}
