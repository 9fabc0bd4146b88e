import Synchronization

extension Loop {
    /// Where a loop is in its life. It only moves forward.
    enum Lifecycle: UInt8, AtomicRepresentable {
        /// Its thread is alive: the loop takes items, blocks and jobs.
        case alive
        /// Its thread is exiting and the teardown has begun: nothing more is accepted (``Loop/isTerminated``). Also,
        /// for good, every loop of the parent in a child of `fork()`, where it has no thread (see ``ForkGuard``).
        case tearingDown
        /// The teardown is over: every item was taken out and reset, so it may join another loop
        /// (``LoopItem/bind(to:)``).
        case released
    }

    /// What any thread may read or set to steer a loop: its lifecycle, the stop and wake-up requests, the three
    /// settings, and the virtual clock of a loop on virtual time. Atomics only, so every member is safe from any
    /// thread; none of them is ever replaced.
    struct Control: ~Copyable {
        /// Where the loop is in its life.
        let lifecycle = Atomic<Lifecycle>(.alive)
        /// A stop for the innermost run; set from any thread, consumed by the run's exit check.
        let stopRequested = Atomic<Bool>(false)
        /// A wake-up asked for while the loop was awake: it makes the next sleep return at once.
        let wakeRequested = Atomic<Bool>(false)
        /// ``Loop/servesMainQueue``.
        let servesMainQueue: Atomic<Bool>
        /// ``Loop/mainQueueKeepsRunAlive``.
        let mainQueueKeepsRunAlive = Atomic<Bool>(true)
        /// ``Loop/keepsRunningWhenEmpty``.
        let keepsRunningWhenEmpty = Atomic<Bool>(false)

        /// The loop's time when it runs on virtual time (``Loop/isVirtual``), chosen once when the loop is made;
        /// `nil` for a loop on `CLOCK_MONOTONIC`.
        let virtualClock: VirtualClock?

        init(servesMainQueue: Bool, virtualClock: VirtualClock? = nil) {
            self.servesMainQueue = Atomic(servesMainQueue)
            self.virtualClock = virtualClock
        }
    }
}
