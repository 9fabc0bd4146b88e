import Glibc
import RunLoopKitSystem
import Synchronization

extension Loop {
    /// Who a loop is: fixed when it is made. Safe from any thread.
    struct Identity: Sendable {
        /// The owning thread's kernel id (the process id for the main loop), for descriptions and trap messages.
        let threadID: pid_t
        /// Whether this is the main thread's loop.
        let isMain: Bool
        /// A number no other loop of the process has, so a ``Loop/ScheduledCallback`` of one loop is ignored by
        /// another.
        let serial: UInt32
        /// The loop's slot in ``LiveLoops``, the table the `fork()` child handler walks; -1 when the table was full
        /// (then the loop's `init` throws).
        let forkSlot: Int

        private static let serials = Atomic<UInt32>(0)

        /// The identity of a loop being made now on the calling thread (or for the main thread), with a slot reserved
        /// for it in ``LiveLoops``.
        static func next(isMain: Bool) -> Identity {
            Identity(
                threadID: isMain ? getpid() : ThreadIdentity.currentThreadID(), isMain: isMain,
                serial: serials.add(1, ordering: .relaxed).newValue, forkSlot: LiveLoops.reserve())
        }
    }
}
