import RunLoopKit
import SplitMix64
import Synchronization

/// S2, timer churn against live timers (a scaling table, not one of the shared W1–W5): W4's schedule+cancel pair
/// with 1k, 10k, 100k and 1M timers live.
///
/// For each window W, on a fresh loop thread: W timers are scheduled first (not timed), then the timed loop runs
/// `iterations` pairs, each cancelling the oldest live timer and scheduling a new one due at t0 + U[10 s, 20 s)
/// (t0 taken once before filling), so exactly W timers are live at every pair and none fire; then the W left are
/// cancelled (not timed). Unlike W4, only the steady state is timed, so the figure is the pair's cost at W live
/// timers. Timers are `LoopTimer(at:)` + `loop.add`, cancelled with `invalidate()`, with a handler that
/// captures nothing, as in W4.
///
/// `iterations` is max(1,000,000, 2 × W) (`--quick`: ÷ 10); the windows stay as they are under `--quick`.
/// Metrics: `pair_1k` … `pair_1M` in ns per pair, and `pair_1M/pair_1k`.
///
/// `S2c` is the same with one-shot callbacks (`Loop.schedule(at:)`, `Loop.cancel(_:)`), as W4c.
class TimerScalingBenchmark: Benchmark {
    class var name: String { "timer-churn-vs-live" }
    class var id: String { "S2" }
    class var title: String { "timer churn with 1k, 10k, 100k, 1M live timers" }
    /// Whether timers are one-shot callbacks (S2c) rather than `LoopTimer` objects.
    class var usesCallbacks: Bool { false }

    private static let spread: Range<Int64> = 10_000_000_000..<20_000_000_000
    private static let windows: [(count: Int, name: String)] = [
        (1_000, "1k"), (10_000, "10k"), (100_000, "100k"), (1_000_000, "1M"),
    ]
    private let scale: Int

    required init(scale: Int) {
        self.scale = scale
    }

    func setUp() {}

    func run() throws -> [Metric] {
        var perPair: [Double] = []
        for (window, _) in Self.windows {
            let iterations = max(1_000_000, 2 * window) / scale
            let offsets = SplitMix64.offsets(count: window + iterations, in: Self.spread)
            let host = LoopHost()
            defer { host.shutDown() }
            let churn = WindowChurn(offsets: offsets, window: window)
            host.loop.perform { Self.usesCallbacks ? churn.churnCallbacks() : churn.churn() }
            guard churn.done.wait() else {
                throw BenchmarkFailure("\(Self.name): the churn did not finish within 300 s")
            }
            if let failure = churn.failure { throw failure }
            perPair.append(Double(churn.end - churn.start) / Double(iterations))
        }
        let fired = unexpectedTimerFires.load(ordering: .relaxed)
        guard fired == 0 else { throw BenchmarkFailure("\(Self.name): \(fired) timers fired") }
        var metrics: [Metric] = []
        for (index, (_, name)) in Self.windows.enumerated() {
            metrics.append(
                Metric("pair_\(name)", unit: "ns", key: "pair_\(name)_ns", value: perPair[index], decimals: 1))
        }
        metrics.append(
            Metric("pair_1M/pair_1k", unit: "x", key: "pair_1M_ratio", value: perPair[3] / perPair[0], decimals: 2))
        return metrics
    }

    func tearDown() {}
}

/// S2c: S2 with one-shot callbacks.
final class CallbackScalingBenchmark: TimerScalingBenchmark {
    override class var name: String { "timer-churn-callback-vs-live" }
    override class var id: String { "S2c" }
    override class var title: String { "callback churn with 1k, 10k, 100k, 1M live callbacks" }
    override class var usesCallbacks: Bool { true }
}

/// One window's churn. Touched on the loop's thread only; the main thread reads it after `done`.
private final class WindowChurn: @unchecked Sendable {
    let offsets: [Int64]
    let window: Int
    var start: Int64 = 0
    var end: Int64 = 0
    var failure: BenchmarkFailure?
    let done = WaitCounter()

    init(offsets: [Int64], window: Int) {
        self.offsets = offsets
        self.window = window
    }

    /// On the loop's thread: fills the window, times the pairs, cancels what is left.
    func churn() {
        defer { done.increment() }
        let loop = Loop.current
        var live: [LoopTimer] = []
        live.reserveCapacity(window)
        defer { for timer in live { timer.invalidate() } }
        let t0 = Clock.monotonic()
        do {
            for index in 0..<window {
                let timer = try LoopTimer(
                    at: Loop.Instant(nanoseconds: t0 + offsets[index]), handler: countUnexpectedFire)
                try loop.add(timer)
                live.append(timer)
            }
            start = Clock.monotonic()
            for index in window..<offsets.count {
                let slot = index % window
                live[slot].invalidate()
                let timer = try LoopTimer(
                    at: Loop.Instant(nanoseconds: t0 + offsets[index]), handler: countUnexpectedFire)
                try loop.add(timer)
                live[slot] = timer
            }
            end = Clock.monotonic()
        } catch {
            failure = BenchmarkFailure("timer-churn-vs-live: scheduling failed: \(error)")
        }
    }

    /// As ``churn()``, with one-shot callbacks; the callback captures nothing.
    func churnCallbacks() {
        defer { done.increment() }
        let loop = Loop.current
        var live: [Loop.ScheduledCallback] = []
        live.reserveCapacity(window)
        defer { for callback in live { loop.cancel(callback) } }
        let t0 = Clock.monotonic()
        let unexpected: @Sendable () -> Void = { unexpectedTimerFires.add(1, ordering: .relaxed) }
        do {
            for index in 0..<window {
                live.append(try loop.schedule(at: Loop.Instant(nanoseconds: t0 + offsets[index]), unexpected))
            }
            start = Clock.monotonic()
            for index in window..<offsets.count {
                let slot = index % window
                loop.cancel(live[slot])
                live[slot] = try loop.schedule(at: Loop.Instant(nanoseconds: t0 + offsets[index]), unexpected)
            }
            end = Clock.monotonic()
        } catch {
            failure = BenchmarkFailure("timer-churn-callback-vs-live: scheduling failed: \(error)")
        }
    }
}
