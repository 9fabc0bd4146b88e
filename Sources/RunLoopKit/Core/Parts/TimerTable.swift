import Synchronization

/// A loop's timers and one-shot callbacks: what is scheduled, what came due while none of its modes ran, and the
/// sequence that orders equal fire times across both. Loop thread only.
struct TimerTable {
    /// Scheduled ``LoopTimer``s, by latest fire time.
    var heap = TimerHeap()
    /// Timers that came due while none of their modes was running.
    var parked: [LoopTimer] = []
    /// One-shot callbacks (``Loop/schedule(at:tolerance:in:_:)``), with their own heap and parked list.
    var callbacks = CallbackTimers()
    /// Callbacks scheduled from other threads, by id, while they wait to run (their slot is only known once the
    /// loop's thread applied them).
    var remoteCallbacks: [UInt64: (slot: Int32, generation: UInt32)] = [:]
    /// Callbacks scheduled in ``Loop/Mode/common``: they keep every common mode's runs going.
    var commonCallbackCount = 0
    /// The next tie-breaker among equal fire times: timers and callbacks fire in the order they were scheduled.
    private var nextSequence: UInt64 = 0

    /// Ids of callbacks scheduled from other threads, unique in the process (a loop looks them up in its own
    /// ``remoteCallbacks`` only).
    static let remoteCallbackIDs = Atomic<UInt64>(0)

    /// A new tie-breaker, later than every one handed out before.
    mutating func takeSequence() -> UInt64 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }
}
