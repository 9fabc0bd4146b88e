import CRunLoopShims
import RunLoopKitSystem
import Synchronization

extension Loop {
    /// The time of a loop on virtual time (``Loop/isVirtual``): an instant that only the loop's thread moves, when the
    /// loop is durably idle or asked to advance (Docs/TestingAndDiagnosing.md). A real-time loop has none and reads
    /// `CLOCK_MONOTONIC` directly.
    ///
    /// Threading: the time is read from any thread (``Loop/now``, ``Loop/Instant/now`` on the loop's thread); it is
    /// moved, and the flags below are used, on the loop's thread only. Atomics, so the class is `Sendable` as is.
    final class VirtualClock: Sendable {
        /// The loop's time, in nanoseconds on ``Loop/Instant``'s scale.
        let nanoseconds: Atomic<Int64>
        /// ``Loop/advancesWhenIdle``: whether a plain run moves the time when the loop is durably idle.
        let advancesWhenIdle: Atomic<Bool>
        /// How many ``Loop/advance(to:in:)`` and ``Loop/runUntilIdle(in:)`` calls are in progress on the loop's
        /// thread: while one is, the time moves whatever ``advancesWhenIdle`` says. Loop thread only.
        let advancing = Atomic<Int>(0)
        /// Where the time jumps if the poll the loop makes in place of a sleep finds nothing: the earlier of the
        /// first timer's latest fire time and the run's deadline; `nil` (`.min`) when the pass is not a candidate
        /// for idleness. Loop thread only.
        let idleTarget = Atomic<Int64>(.min)
        /// Whether the last pass found the loop durably idle: a run on virtual time ends at its deadline only after
        /// such a pass, so everything the instant made ready ran first. Loop thread only.
        let sawIdle = Atomic<Bool>(false)

        init(startingAt start: Int64, advancesWhenIdle: Bool) {
            nanoseconds = Atomic(start)
            self.advancesWhenIdle = Atomic(advancesWhenIdle)
        }

        /// The time now.
        @inline(__always)
        var now: Int64 { nanoseconds.load(ordering: .relaxed) }

        /// Whether a durably idle pass may move the time: in an advance, or in any run when ``advancesWhenIdle``.
        var mayAdvance: Bool {
            advancing.load(ordering: .relaxed) > 0 || advancesWhenIdle.load(ordering: .relaxed)
        }

        /// The clock the calling thread's current loop runs on, if that loop is virtual; one thread-local load.
        @inline(__always)
        static var ofCurrentThread: VirtualClock? {
            guard let pointer = crunloop_virtual_clock() else { return nil }
            return Unmanaged<VirtualClock>.fromOpaque(pointer).takeUnretainedValue()
        }
    }

    /// The loop's time in nanoseconds: its virtual clock's, else `CLOCK_MONOTONIC` (a load and a test more than
    /// reading the clock). Every reading of the loop's time inside the library goes through here. Any thread.
    @inline(__always)
    func clockNow() -> Int64 {
        if let virtual = control.virtualClock { return virtual.now }
        return MonotonicClock.now()
    }
}
