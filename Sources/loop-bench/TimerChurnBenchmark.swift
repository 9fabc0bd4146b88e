import RunLoopKit
import SplitMix64
import Synchronization

/// W4 churn: on the loop thread, for i in 0..<1,000,000 cancel timer i − 10,000 (once i ≥ 10,000), then schedule
/// timer i due at t0 + U[10 s, 20 s), t0 taken once before the loop; then cancel the last 10,000. So 10,000 timers
/// are live and none fire.
///
/// Scheduling is `LoopTimer(at:)` plus `loop.add`, cancelling is `invalidate()`. The handler captures nothing
/// (it counts into a global), so a timer costs what a user's must, not an extra closure context. Metric: `pair`,
/// the whole loop (final cancels included) ÷ 1,000,000.
///
/// `W4c` is the same churn with one-shot callbacks: `Loop.schedule(at:)` and `Loop.cancel(_:)`; `W4f` with their
/// allocation-free form, `Loop.schedule(at:with:_:)`; `W4r` with 10,000 `LoopTimer`s made before the clock, one
/// per slot of the window, as libuv's peer keeps 10,000 `uv_timer_t`s: timer i's slot is re-armed for i's deadline
/// (`setNextFireTime(_:)`, which takes it out of the heap and puts it back), the first 10,000 added.
class TimerChurnBenchmark: Benchmark {
    class var name: String { "timer-churn" }
    class var id: String { "W4" }
    class var title: String { "schedule and cancel LoopTimers, 10,000 live at a time" }
    /// How the timers are scheduled.
    class var form: TimerForm { .timer }

    /// How far ahead timers are due: U[10 s, 20 s).
    private static let spread: Range<Int64> = 10_000_000_000..<20_000_000_000
    /// Timers alive at any time. Kept at 10,000 under `--quick` so the heap has its full depth.
    private static let window = 10_000
    private let iterations: Int
    private var host: LoopHost?
    private var churn: Churn?

    required init(scale: Int) {
        iterations = 1_000_000 / scale
    }

    func setUp() {
        host = LoopHost()
        churn = Churn(
            offsets: SplitMix64.offsets(count: iterations, in: Self.spread), window: Self.window,
            form: Self.form)
    }

    func run() throws -> [Metric] {
        let churn = churn!
        host!.loop.perform {
            switch churn.form {
            case .timer: churn.churn()
            case .reusedTimer: churn.churnReusedTimers()
            case .closure: churn.churnCallbacks()
            case .function: churn.churnFunctionCalls()
            }
        }
        guard churn.done.wait() else { throw BenchmarkFailure("timer-churn: the churn did not finish within 300 s") }
        if let failure = churn.failure { throw failure }
        let fired = unexpectedTimerFires.load(ordering: .relaxed)
        guard fired == 0 else { throw BenchmarkFailure("\(Self.name): \(fired) timers fired") }
        return [
            Metric(
                "pair", unit: "ns", key: "pair_ns",
                value: Double(churn.end - churn.start) / Double(iterations), decimals: 1)
        ]
    }

    func tearDown() {
        host?.shutDown()
    }
}

/// W4c: W4 with one-shot callbacks (`Loop.schedule(at:)` and `Loop.cancel(_:)`) instead of `LoopTimer` objects.
final class CallbackChurnBenchmark: TimerChurnBenchmark {
    override class var name: String { "timer-churn-callback" }
    override class var id: String { "W4c" }
    override class var title: String { "timer-churn with one-shot callbacks, Loop.schedule(at:)" }
    override class var form: TimerForm { .closure }
}

/// W4f: W4 with allocation-free one-shot callbacks (`Loop.schedule(at:with:_:)` and `Loop.cancel(_:)`).
final class FunctionCallbackChurnBenchmark: TimerChurnBenchmark {
    override class var name: String { "timer-churn-c-function" }
    override class var id: String { "W4f" }
    override class var title: String { "timer-churn with allocation-free callbacks, schedule(at:with:_:)" }
    override class var form: TimerForm { .function }
}

/// W4r: W4 with a window of 10,000 `LoopTimer`s made before the clock and re-armed (`setNextFireTime(_:)`).
final class ReusedTimerChurnBenchmark: TimerChurnBenchmark {
    override class var name: String { "timer-churn-rearm" }
    override class var id: String { "W4r" }
    override class var title: String { "timer-churn re-arming LoopTimers made before the clock" }
    override class var form: TimerForm { .reusedTimer }
}

/// The churn loop's state. Touched on the loop's thread only; the main thread reads it after `done`.
private final class Churn: @unchecked Sendable {
    let offsets: [Int64]
    let window: Int
    let form: TimerForm
    var start: Int64 = 0
    var end: Int64 = 0
    var failure: BenchmarkFailure?
    let done = WaitCounter()

    init(offsets: [Int64], window: Int, form: TimerForm) {
        self.offsets = offsets
        self.window = window
        self.form = form
    }

    /// On the loop's thread: the timed loop.
    func churn() {
        defer { done.increment() }
        let loop = Loop.current
        var live = [LoopTimer?](repeating: nil, count: window)
        start = Clock.monotonic()
        do {
            for index in offsets.indices {
                let slot = index % window
                if let old = live[slot] { old.invalidate() }
                let deadline = Loop.Instant(nanoseconds: start + offsets[index])
                let timer = try LoopTimer(at: deadline, handler: countUnexpectedFire)
                try loop.add(timer)
                live[slot] = timer
            }
        } catch {
            failure = BenchmarkFailure("timer-churn: scheduling failed: \(error)")
        }
        for timer in live { timer?.invalidate() }
        end = Clock.monotonic()
    }

    /// On the loop's thread: the timed loop, with the window's timers made first and re-armed: moving a scheduled
    /// timer to a new deadline is W4's cancel and schedule, as `uv_timer_start` on a running handle is libuv's.
    func churnReusedTimers() {
        defer { done.increment() }
        let loop = Loop.current
        let timers: [LoopTimer]
        do {
            timers = try (0..<window).map { _ throws(LoopError) in
                try LoopTimer(at: .now + .seconds(3_600), handler: countUnexpectedFire)
            }
        } catch {
            failure = BenchmarkFailure("timer-churn-rearm: making the timers failed: \(error)")
            return
        }
        start = Clock.monotonic()
        do {
            for index in offsets.indices {
                let timer = timers[index % window]
                timer.setNextFireTime(Loop.Instant(nanoseconds: start + offsets[index]))
                if index < window { try loop.add(timer) }
            }
        } catch {
            failure = BenchmarkFailure("timer-churn-rearm: scheduling failed: \(error)")
        }
        for timer in timers { timer.invalidate() }
        end = Clock.monotonic()
    }

    /// On the loop's thread: the timed loop, with callbacks. The callback captures nothing, as a user's need not:
    /// none may fire, and one that does is counted in `unexpectedTimerFires`.
    func churnCallbacks() {
        churnScheduledCallbacks(workload: "timer-churn-callback") { loop, deadline, _ throws(LoopError) in
            try loop.schedule(at: deadline) { unexpectedTimerFires.add(1, ordering: .relaxed) }
        }
    }

    /// On the loop's thread: the timed loop, with allocation-free callbacks (a C function and a word; none may
    /// fire, and one that does is counted in `unexpectedTimerFires`).
    func churnFunctionCalls() {
        churnScheduledCallbacks(workload: "timer-churn-c-function") { loop, deadline, index throws(LoopError) in
            try loop.schedule(at: deadline, with: index) { _ in unexpectedTimerFires.add(1, ordering: .relaxed) }
        }
    }

    /// The timed loop of W4c and W4f: `schedule(loop, deadline, index)` schedules timer `index` (inlined, so each
    /// form's loop is its own code, as if written out).
    @inline(__always)
    private func churnScheduledCallbacks(
        workload: String,
        _ schedule: (Loop, Loop.Instant, Int) throws(LoopError) -> Loop.ScheduledCallback
    ) {
        defer { done.increment() }
        let loop = Loop.current
        var live = [Loop.ScheduledCallback?](repeating: nil, count: window)
        start = Clock.monotonic()
        do {
            for index in offsets.indices {
                let slot = index % window
                if let old = live[slot] { loop.cancel(old) }
                live[slot] = try schedule(loop, Loop.Instant(nanoseconds: start + offsets[index]), index)
            }
        } catch {
            failure = BenchmarkFailure("\(workload): scheduling failed: \(error)")
        }
        for callback in live { if let callback { loop.cancel(callback) } }
        end = Clock.monotonic()
    }
}

/// Timers of W4 and S2 that fired (none may: they are due 10 s or more after they are cancelled).
let unexpectedTimerFires = Atomic<Int>(0)

/// The churn timers' handler. A closure that captures nothing has no context, so a timer holding it allocates
/// nothing beyond the timer itself.
let countUnexpectedFire: @Sendable (LoopTimer) -> Void = { _ in unexpectedTimerFires.add(1, ordering: .relaxed) }
