import RunLoopKitSystem
import Synchronization

/// One item's rate limit (``RateLimit``): what was asked from any thread, whether the item is paused, and the loop's
/// count of the handler calls of the current window.
///
/// Made the first time the item's limit or limit handler is set, and kept for the item's life. Threading, by field:
/// `settings` under its lock, any thread; `isLimited` atomic, any thread; the rest the owning loop's thread only.
final class RateLimiter: @unchecked Sendable {  // Unchecked: each field's guard is listed above.
    /// What the item's owner asked for, from any thread.
    struct Settings: Sendable {
        /// The limit, `nil` for none.
        var limit: RateLimit?
        /// The handler told when a pause begins and ends, as set (`(Item, Bool) -> Void` for the item's class).
        var handler: (any Sendable)?
        /// The same handler as the loop calls it, with the item as its base class.
        var callout: (@Sendable (LoopItem, Bool) -> Void)?
    }

    let settings = Locked(Settings())
    /// Whether the item is paused: what ``LoopEventItem/isRateLimited`` answers on any thread.
    let isLimited = Atomic<Bool>(false)

    /// The applied limit's interval in nanoseconds and burst. Loop thread only.
    var intervalNanoseconds: Int64 = 0
    var burst = 0
    /// When the current window opened, and how many handler calls it made. Loop thread only.
    var windowStart: Int64 = 0
    var callsInWindow = 0
    /// Whether the item is paused, the callback that ends the pause, and the loop that paused it. Loop thread only.
    var isPaused = false
    var resumeCallback: (slot: Int32, generation: UInt32)?
    var pausedBy: ObjectIdentifier?

    /// Counts a handler call if the window allows one more; answers whether it does (never while paused). A window
    /// opens at the first call after the previous one ended. Loop thread only.
    @inline(__always)
    func admitsCall(at now: Int64) -> Bool {
        if isPaused { return false }
        if callsInWindow == 0 || now - windowStart >= intervalNanoseconds {
            windowStart = now
            callsInWindow = 1
            return true
        }
        guard callsInWindow < burst else { return false }
        callsInWindow += 1
        return true
    }

    /// When the current window ends. Loop thread only.
    var windowEnd: Int64 { windowStart.addingSaturating(intervalNanoseconds) }

    /// Forgets the pause and the window (a new window opens at the next call). Loop thread only.
    func endPause() {
        isPaused = false
        resumeCallback = nil
        pausedBy = nil
        callsInWindow = 0
        isLimited.store(false, ordering: .releasing)
    }
}
