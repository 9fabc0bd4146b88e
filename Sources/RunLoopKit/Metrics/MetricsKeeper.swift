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
    /// Where the loop's time goes, as its thread counts it; published through the cells below at each change of
    /// phase. Loop thread only.
    @exclusivity(unchecked) var tally = MetricsTally()
    /// The handler called at the end of every pass (``Loop/reportPasses(to:)``). Loop thread only.
    @exclusivity(unchecked) var passReporter = PassReporter()
    /// The flight recorder the loop writes, `nil` while it is off (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``).
    /// Loop thread only: each callout tests it. Unmanaged, so a callout neither retains nor releases it:
    /// ``heldRecorder`` holds it.
    @exclusivity(unchecked) var flightRecorder: Unmanaged<FlightRecorder>?
    /// The last recorder enabled, kept when it is disabled: the passes and callouts it began are ended in it. Loop
    /// thread only; unmanaged too.
    @exclusivity(unchecked) var endingRecorder: Unmanaged<FlightRecorder>?
    /// The strong reference behind the two above. Loop thread only.
    @exclusivity(unchecked) var heldRecorder: FlightRecorder?
    /// The recorder readers copy from: the last one enabled, kept after it is disabled. Any thread, under its lock,
    /// which only readers and enabling take (never the loop's passes).
    let recorderForReaders = Locked<FlightRecorder?>(nil)
    /// The hand-over latencies the loop records into, `nil` while they are off (``Loop/enableHandOverLatencies()``).
    /// Loop thread only: each hand-over point tests it. Unmanaged: ``handOversForReaders`` holds it, for the
    /// loop's lifetime once enabled.
    @exclusivity(unchecked) var handOvers: Unmanaged<HandOverRecorder>?
    /// When the loop's last `epoll_wait` that reported something returned, while hand-over latencies are on (else
    /// not written). Loop thread only.
    @exclusivity(unchecked) var eventsReturnedAt: Int64 = 0
    /// The hand-over latencies readers copy from: made once, on the first enabling, and kept. Any thread, under its
    /// lock, which only readers and enabling take.
    let handOversForReaders = Locked<HandOverRecorder?>(nil)
    /// Whether threads that hand work over stamp it with the time (a relaxed load on each post). Any thread.
    let stampsHandOvers = Atomic<Bool>(false)
    /// The loop's virtual clock, which the time figures follow, if it runs on virtual time.
    let virtualClock: Loop.VirtualClock?

    init(virtualClock: Loop.VirtualClock?) {
        self.virtualClock = virtualClock
    }

    /// Completed passes.
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
        let now = virtualClock?.now ?? MonotonicClock.now()
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
                let now = virtualClock?.now ?? MonotonicClock.now()
                if sequence.load(ordering: .acquiring) == before || !retrying {
                    let (asleep, awake) = tally.totals(at: now)
                    return (now, asleep, awake)
                }
            }
        }
    }
}

/// Where a loop's time goes, as its thread counts it for ``Loop/metrics``: time asleep and awake, the phase in
/// progress, the longest pass (awake). Loop thread only; other threads read the copy in ``MetricsKeeper``, where the counts
/// live too.
///
/// Time is kept by phase, for the loop as a whole rather than per pass, so nested runs are never counted twice: the
/// loop is outside every run, awake in one (its passes, callouts and nested runs), or asleep in `epoll_wait`. Each
/// change of phase adds the time since the previous one to the phase it ends, from clock readings the loop takes
/// anyway or, around a sleep and at an outermost run's entry and exit, readings of their own.
struct MetricsTally {
    /// Where the loop's time goes now.
    enum Phase: Int {
        /// No run in progress: the time counts as neither asleep nor awake.
        case outside = 0
        /// In a run, not asleep.
        case awake = 1
        /// Blocked in `epoll_wait`.
        case asleep = 2
    }

    /// Nanoseconds asleep and awake in phases that ended.
    var asleep: Int64 = 0
    var awake: Int64 = 0
    /// The current phase, and the monotonic time it began.
    var phase = Phase.outside
    var phaseSince: Int64 = 0
    /// The longest time a pass was awake so far (its length less its sleep), in nanoseconds; the loop's own copy of
    /// ``MetricsKeeper/longestPass``.
    var longestPass: Int64 = 0

    /// Ends the current phase at `time`, adding its length to its total, and begins `next`.
    @inline(__always)
    mutating func enter(_ next: Phase, at time: Int64) {
        let elapsed = max(0, time &- phaseSince)
        switch phase {
        case .outside: break
        case .awake: awake &+= elapsed
        case .asleep: asleep &+= elapsed
        }
        phase = next
        phaseSince = time
    }

    /// Time asleep and awake up to `now`: the phase in progress counts up to it (nothing if it began later).
    func totals(at now: Int64) -> (asleep: Int64, awake: Int64) {
        let current = max(0, now &- phaseSince)
        return (phase == .asleep ? asleep &+ current : asleep, phase == .awake ? awake &+ current : awake)
    }
}

/// The handler ``Loop/reportPasses(to:)`` set, called at the end of every pass. Loop thread only.
struct PassReporter {
    /// The handler, `nil` when none is set.
    var handler: (@Sendable (Loop.PassFigures) -> Void)?
    /// The handler is running: passes of a run nested in it are not reported.
    var isCalling = false
    /// The callouts counted when the pass in progress of an outermost run began (if a handler was set then).
    private var outermostStart = Loop.HandledCounts()
    /// The same for the passes in progress of nested runs, by depth from 2. Grows to the deepest nesting reported,
    /// then allocates no more.
    private var nestedStarts: [Loop.HandledCounts] = []

    /// Keeps `counts` as the start of the pass beginning in a run at `depth` (1: an outermost run).
    @inline(__always)
    mutating func markStart(_ counts: Loop.HandledCounts, depth: Int) {
        if depth == 1 {
            outermostStart = counts
        } else {
            markNestedStart(counts, depth: depth)
        }
    }

    private mutating func markNestedStart(_ counts: Loop.HandledCounts, depth: Int) {
        while nestedStarts.count <= depth - 2 { nestedStarts.append(Loop.HandledCounts()) }
        nestedStarts[depth - 2] = counts
    }

    /// The counts ``markStart(_:depth:)`` kept for the pass in progress at `depth`.
    @inline(__always)
    func start(depth: Int) -> Loop.HandledCounts {
        depth == 1 ? outermostStart : nestedStarts[depth - 2]
    }
}

/// Where a pass began, taken at its start: its end measures the pass from it. Loop thread only, on the stack (two
/// words and a flag, so a pass keeps little across its callouts).
struct PassMark {
    /// When the pass began (the end of the previous pass of its run, or the run's start).
    let startedAt: Int64
    /// The loop's asleep total then: what the pass slept is the difference at its end.
    let asleep: Int64
    /// A pass handler was set then: the callouts counted so far wait in the ``PassReporter`` (by the run's depth),
    /// and the pass is reported.
    let isReported: Bool
}
