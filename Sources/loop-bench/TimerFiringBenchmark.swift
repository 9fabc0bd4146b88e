import Glibc
import RunLoopKit
import SplitMix64

/// W3 timers: on the loop thread, take t0 and schedule N = 100,000 one-shot timers due at t0 + U[0, 500 ms), then
/// run until all have fired.
///
/// Metrics: `schedule`, the whole scheduling loop (creating each `LoopTimer` and adding it) ÷ N; `late_p50` and
/// `late_p99`, fire time minus deadline over all timers; `late_p99_steady`, p99 over the timers due at or after the
/// end of the scheduling loop; `early`, timers that fired before their deadline (reported, and the run fails unless
/// it is 0).
///
/// `W3c` is the same workload scheduled with `Loop.schedule(at:)`, the one-shot callbacks that need no object;
/// `W3f` with their allocation-free form, `Loop.schedule(at:with:_:)` (a C function and the timer's index); `W3r`
/// with `LoopTimer`s made before the clock starts, as libuv's peer sets up its `uv_timer_t`s: the timed loop sets
/// each one's fire time (`setNextFireTime(_:)`) and adds it.
class TimerFiringBenchmark: Benchmark {
    class var name: String { "timer-firing" }
    class var id: String { "W3" }
    class var title: String { "schedule 100,000 LoopTimers, then how late each fires" }
    /// How the timers are scheduled.
    class var form: TimerForm { .timer }

    /// The deadline spread: U[0, 500 ms).
    private static let spread: Range<Int64> = 0..<500_000_000
    private let count: Int
    private var host: LoopHost?
    private var schedule: Schedule?

    required init(scale: Int) {
        count = 100_000 / scale
    }

    func setUp() {
        host = LoopHost()
        schedule = Schedule(
            offsets: SplitMix64.offsets(count: count, in: Self.spread), form: Self.form)
    }

    func run() throws -> [Metric] {
        let schedule = schedule!
        Schedule.current = schedule
        defer { Schedule.current = nil }
        host!.loop.perform { schedule.scheduleAll() }
        guard schedule.done.wait(timeout: .seconds(120)) else {
            throw BenchmarkFailure("timer-firing: \(schedule.fired) of \(count) timers fired within 120 s")
        }
        if let failure = schedule.failure { throw failure }

        let steadyStart = schedule.scheduled
        var all: [Int64] = []
        var steady: [Int64] = []
        all.reserveCapacity(count)
        for index in 0..<count {
            let late = schedule.lateness[index]
            all.append(late)
            if schedule.deadlines[index] >= steadyStart { steady.append(late) }
        }
        all.sort()
        steady.sort()
        let early = all.prefix { $0 < 0 }.count
        let steadyP99 = steady.isEmpty ? 0 : Double(Percentile.nearestRank(99, of: steady)) / 1e3
        return [
            Metric(
                "schedule", unit: "ns", key: "schedule_ns",
                value: Double(schedule.scheduled - schedule.start) / Double(count), decimals: 1),
            Metric(
                "late_p50", unit: "µs", key: "late_p50_us",
                value: Double(Percentile.nearestRank(50, of: all)) / 1e3, decimals: 1),
            Metric(
                "late_p99", unit: "µs", key: "late_p99_us",
                value: Double(Percentile.nearestRank(99, of: all)) / 1e3, decimals: 1),
            Metric("late_p99_steady", unit: "µs", key: "late_p99_steady_us", value: steadyP99, decimals: 1),
            Metric("early", unit: "", key: "early", value: Double(early), decimals: 0, mustBeZero: true),
        ]
    }

    func tearDown() {
        host?.shutDown()
        schedule?.deallocate()
    }
}

/// W3c: W3 with one-shot callbacks (`Loop.schedule(at:)`) instead of `LoopTimer` objects.
final class CallbackFiringBenchmark: TimerFiringBenchmark {
    override class var name: String { "timer-firing-callback" }
    override class var id: String { "W3c" }
    override class var title: String { "timer-firing with one-shot callbacks, Loop.schedule(at:)" }
    override class var form: TimerForm { .closure }
}

/// W3f: W3 with allocation-free one-shot callbacks (`Loop.schedule(at:with:_:)`): a C function called with the
/// timer's index, so scheduling allocates no closure context.
final class FunctionCallbackFiringBenchmark: TimerFiringBenchmark {
    override class var name: String { "timer-firing-c-function" }
    override class var id: String { "W3f" }
    override class var title: String { "timer-firing with allocation-free callbacks, schedule(at:with:_:)" }
    override class var form: TimerForm { .function }
}

/// W3r: W3 with `LoopTimer`s made before the clock starts (their handlers too), each given its fire time and added
/// in the timed loop: what a timer costs that the program keeps and re-arms, as libuv's handles are kept.
final class ReusedTimerFiringBenchmark: TimerFiringBenchmark {
    override class var name: String { "timer-firing-rearm" }
    override class var id: String { "W3r" }
    override class var title: String { "timer-firing with LoopTimers made before the clock, re-armed" }
    override class var form: TimerForm { .reusedTimer }
}

/// How W3 and W4 schedule their timers.
enum TimerForm {
    /// `LoopTimer` objects (W3, W4).
    case timer
    /// `LoopTimer` objects made before the clock starts, re-armed with `setNextFireTime(_:)` (W3r, W4r).
    case reusedTimer
    /// One-shot callbacks with a closure (`Loop.schedule(at:)`, W3c, W4c).
    case closure
    /// One-shot callbacks with a C function and a word (`Loop.schedule(at:with:_:)`, W3f, W4f).
    case function
}

/// The timers' deadlines and how late each fired. Written on the loop's thread only; the main thread reads it
/// after `done`, which orders the accesses.
private final class Schedule: @unchecked Sendable {
    let offsets: [Int64]
    let form: TimerForm
    let deadlines: UnsafeMutableBufferPointer<Int64>
    let lateness: UnsafeMutableBufferPointer<Int64>
    var start: Int64 = 0
    var scheduled: Int64 = 0
    var fired = 0
    var failure: BenchmarkFailure?
    let done = WaitCounter()

    /// The run under way, for W3f's C function (which captures nothing). Set by the main thread before the run
    /// starts and cleared after it ended; the loop's thread reads it in between.
    nonisolated(unsafe) static var current: Schedule?

    /// Whether the loop's callback table is sized before the clock starts (`LOOP_BENCH_RESERVE=1`, callbacks only).
    var reservesCapacity: Bool { form != .timer && getenv("LOOP_BENCH_RESERVE") != nil }

    init(offsets: [Int64], form: TimerForm) {
        self.offsets = offsets
        self.form = form
        deadlines = .allocate(capacity: offsets.count)
        deadlines.initialize(repeating: 0)
        lateness = .allocate(capacity: offsets.count)
        lateness.initialize(repeating: 0)
    }

    func deallocate() {
        deadlines.deallocate()
        lateness.deallocate()
    }

    /// On the loop's thread: the timed scheduling loop.
    func scheduleAll() {
        let loop = Loop.current
        if reservesCapacity {
            // Untimed, as the C peers set up their timer handles before the clock starts.
            do { try loop.reserveCallbackCapacity(offsets.count) } catch { failure = BenchmarkFailure("\(error)") }
        }
        // Untimed, as libuv's peer sets up its timer handles before the clock starts.
        let prepared = form == .reusedTimer ? makeTimers() : []
        start = Clock.monotonic()
        do {
            for index in offsets.indices {
                let deadline = start + offsets[index]
                deadlines[index] = deadline
                switch form {
                case .reusedTimer:
                    prepared[index].setNextFireTime(Loop.Instant(nanoseconds: deadline))
                    try loop.add(prepared[index])
                case .timer:
                    let timer = try LoopTimer(at: Loop.Instant(nanoseconds: deadline)) { [self] _ in fire(index) }
                    try loop.add(timer)
                case .closure:
                    try loop.schedule(at: Loop.Instant(nanoseconds: deadline)) { [self] in fire(index) }
                case .function:
                    try loop.schedule(at: Loop.Instant(nanoseconds: deadline), with: index) { index in
                        Schedule.current.unsafelyUnwrapped.fire(index)
                    }
                }
            }
        } catch {
            failure = BenchmarkFailure("timer-firing: scheduling failed: \(error)")
            done.increment()
        }
        scheduled = Clock.monotonic()
    }

    /// W3r's timers, one per offset, due in the distant future until the timed loop sets their time.
    private func makeTimers() -> [LoopTimer] {
        do {
            return try offsets.indices.map { index throws(LoopError) in
                try LoopTimer(at: .now + .seconds(3_600)) { [self] _ in fire(index) }
            }
        } catch {
            failure = BenchmarkFailure("timer-firing-rearm: making the timers failed: \(error)")
            return []
        }
    }

    /// On the loop's thread: timer `index` fires.
    fileprivate func fire(_ index: Int) {
        lateness[index] = Clock.monotonic() - deadlines[index]
        fired += 1
        if fired == offsets.count { done.increment() }
    }
}
