import Synchronization

/// A loop's figures as other threads read them (``Loop/metrics``), written by the loop's thread alone.
///
/// Counts are cells of their own, updated where they change: the loop's thread is the only writer, so a bump is a
/// relaxed load and store (plain moves, no locked instruction) and a pass publishes nothing in bulk. The four
/// figures of time change together, at a change of phase only (a sleep's start and end, an outermost run's entry
/// and exit, never at the end of a pass), behind a sequence lock: the writer never waits, and a reader retries
/// while they are being written, so the asleep and awake totals and the phase in progress it sees always agree.
///
/// Writing the time: a relaxed store of an odd sequence number, a releasing store per figure and a releasing store
/// of the next even number (plain moves on x86-64, `stlr` on arm64, no fence). Reading: the sequence (acquiring),
/// each figure (acquiring, so the second load of the sequence cannot move before them), the sequence again; an odd
/// or changed number means a write overlapped, and it reads again.
///
/// Threading: the bumps and ``publishTime(of:)`` on the loop's thread only; the reads from any thread.
final class MetricsCells: Sendable {
    /// Completed passes.
    let passes = Atomic<Int>(0)
    /// The longest pass, in nanoseconds.
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

    /// Copies the time figures of `tally` for other threads. Loop thread only, after each change of phase.
    @inline(__always)
    func publishTime(of tally: borrowing MetricsTally) {
        let writing = sequence.load(ordering: .relaxed) &+ 1
        sequence.store(writing, ordering: .relaxed)
        asleep.store(tally.asleep, ordering: .releasing)
        awake.store(tally.awake, ordering: .releasing)
        phase.store(tally.phase.rawValue, ordering: .releasing)
        phaseSince.store(tally.phaseSince, ordering: .releasing)
        sequence.store(writing &+ 1, ordering: .releasing)
    }

    /// The last published time figures, read whole, as a tally without counts. Any thread; retries while the loop's
    /// thread writes them (five stores).
    ///
    /// `retrying: false` takes them as they are, once: for a loop made before a `fork()`, read in the child, where
    /// the writer may have stopped for good in the middle of a write (its thread does not exist there).
    func readTime(retrying: Bool = true) -> MetricsTally {
        while true {
            let before = sequence.load(ordering: .acquiring)
            if before & 1 == 0 || !retrying {
                var tally = MetricsTally()
                tally.asleep = asleep.load(ordering: .acquiring)
                tally.awake = awake.load(ordering: .acquiring)
                tally.phase = MetricsTally.Phase(rawValue: phase.load(ordering: .acquiring)) ?? .outside
                tally.phaseSince = phaseSince.load(ordering: .acquiring)
                if sequence.load(ordering: .relaxed) == before || !retrying { return tally }
            }
        }
    }
}
