import RunLoopKitSystem
import Synchronization

/// A loop's metrics, as one part: the figures other threads read (``Loop/metrics``), written by the loop's thread
/// alone, with the loop thread's own running tally of its time (``MetricsTally``) and the handler of every pass
/// (``PassReporter``).
///
/// Counts are cells of their own, updated where they change: the loop's thread is the only writer, so a bump is a
/// relaxed load and store (plain moves, no locked instruction) and a pass publishes nothing in bulk. The four
/// figures of time change together, at a change of phase only (a sleep's start and end, an outermost run's entry
/// and exit, never at the end of a pass), behind a sequence lock: the writer never waits, and a reader retries
/// while they are being written, so the asleep and awake totals and the phase in progress it sees always agree.
///
/// A change of phase (``changePhase(to:)``) stores an odd sequence number, sequentially consistent (on x86-64
/// an `xchg`, a full barrier), reads the clock only then, stores the figures (releasing) and the next even number
/// (releasing). A reader (``readTime(retrying:)``) reads the sequence (acquiring), the figures (acquiring), the clock,
/// and the sequence again (acquiring); an odd or changed number means a write overlapped, and it reads again. So the
/// phase a reader saw was still in progress when it read the clock (the loop reads its clock for the next change
/// only after that change's odd number is visible): a snapshot is the loop's state at one instant, the stretch it
/// adds up to its reading is never one the loop had ended, and the totals never go back from one snapshot to the
/// next.
///
/// Threading: the bumps and ``changePhase(of:to:)`` on the loop's thread only; the reads from any thread.
final class MetricsKeeper: @unchecked Sendable {  // Unchecked: `tally` and `passReporter` are loop-thread only.
    /// Completed passes.
    /// Where the loop's time goes, as its thread counts it; published through the cells below at each change of
    /// phase. Loop thread only.
    @exclusivity(unchecked) var tally = MetricsTally()
    /// The handler called at the end of every pass (``Loop/reportPasses(to:)``). Loop thread only.
    @exclusivity(unchecked) var passReporter = PassReporter()

    let passes = Atomic<Int>(0)
    /// The longest time a pass was awake, in nanoseconds.
    let longestPass = Atomic<Int64>(0)
    /// Callouts, by kind (``Loop/HandledCounts``).
    let sourcesPerformed = Atomic<Int>(0)
    let descriptorReports = Atomic<Int>(0)
    let timersFired = Atomic<Int>(0)
    let callbacksRun = Atomic<Int>(0)
    let observerCalls = Atomic<Int>(0)
    let blocksRun = Atomic<Int>(0)
    let jobsRun = Atomic<Int>(0)
    let mainQueueDrains = Atomic<Int>(0)

    /// The time figures of ``MetricsTally``, behind ``sequence``.
    private let sequence = Atomic<UInt64>(0)
    private let asleep = Atomic<Int64>(0)
    private let awake = Atomic<Int64>(0)
    private let phase = Atomic<Int>(0)
    private let phaseSince = Atomic<Int64>(0)

    /// Adds one to `cell`. Loop thread only: the single writer's update, a load and a store.
    @inline(__always)
    static func bump(_ cell: borrowing Atomic<Int>) {
        cell.store(cell.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    /// The callouts counted so far. Any thread; each count is exact at the moment it is read, one after another.
    @inline(__always)
    var handled: Loop.HandledCounts {
        Loop.HandledCounts(
            sourcesPerformed: sourcesPerformed.load(ordering: .relaxed),
            descriptorReports: descriptorReports.load(ordering: .relaxed),
            timersFired: timersFired.load(ordering: .relaxed),
            callbacksRun: callbacksRun.load(ordering: .relaxed),
            observerCalls: observerCalls.load(ordering: .relaxed),
            blocksRun: blocksRun.load(ordering: .relaxed),
            jobsRun: jobsRun.load(ordering: .relaxed),
            mainQueueDrains: mainQueueDrains.load(ordering: .relaxed))
    }

    /// Ends the tally's phase and begins `next` now, publishing the time figures; answers the clock reading the
    /// change was made at. Loop thread only.
    @inline(__always)
    func changePhase(to next: MetricsTally.Phase) -> Int64 {
        let writing = sequence.load(ordering: .relaxed) &+ 1
        // Visible before the clock is read: a reader that saw the previous phase read its clock before this one.
        sequence.store(writing, ordering: .sequentiallyConsistent)
        let now = MonotonicClock.now()
        tally.enter(next, at: now)
        asleep.store(tally.asleep, ordering: .releasing)
        awake.store(tally.awake, ordering: .releasing)
        phase.store(tally.phase.rawValue, ordering: .releasing)
        phaseSince.store(tally.phaseSince, ordering: .releasing)
        sequence.store(writing &+ 1, ordering: .releasing)
        return now
    }

    /// The time figures now: a clock reading, and the totals with the phase in progress counted up to it. Any
    /// thread; retries while the loop's thread writes them (five stores).
    ///
    /// `retrying: false` takes them as they are, once: for a loop made before a `fork()`, read in the child, where
    /// the writer may have stopped for good in the middle of a write (its thread does not exist there).
    func readTime(retrying: Bool = true) -> (now: Int64, asleep: Int64, awake: Int64) {
        while true {
            let before = sequence.load(ordering: .acquiring)
            if before & 1 == 0 || !retrying {
                var tally = MetricsTally()
                tally.asleep = asleep.load(ordering: .acquiring)
                tally.awake = awake.load(ordering: .acquiring)
                tally.phase = MetricsTally.Phase(rawValue: phase.load(ordering: .acquiring)) ?? .outside
                tally.phaseSince = phaseSince.load(ordering: .acquiring)
                // Inside the read: unless the sequence moved meanwhile, the phase read was still in progress now.
                let now = MonotonicClock.now()
                if sequence.load(ordering: .acquiring) == before || !retrying {
                    let (asleep, awake) = tally.totals(at: now)
                    return (now, asleep, awake)
                }
            }
        }
    }
}
