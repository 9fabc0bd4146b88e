import Glibc
import RunLoopKit

/// C, clock lateness: 1,000 sleeps of 1 ms one after another (100 with `--quick`), each measured from its deadline
/// to the moment the sleeping code runs again; median and 99th percentile in µs, four ways in one run:
///
/// - `loop`: `Task.sleep(for:clock: loop.clock)` in a task that prefers the loop (it resumes on the loop's thread);
/// - `loop_tol`: the same with a tolerance of 500 µs;
/// - `loop_global`: the loop's clock from a task on the global executor (the resumption hops back to it);
/// - `continuous`: `Task.sleep(for:)` on `ContinuousClock`, the runtime's own timer, from the global executor.
final class ClockLatenessBenchmark: Benchmark {
    static let name = "clock-sleep-lateness"
    static let id = "C"
    static let title = "Task.sleep on loop.clock vs ContinuousClock"

    private let sleeps: Int
    private var thread: LoopThread?

    init(scale: Int) {
        sleeps = 1_000 / scale
    }

    func setUp() throws {
        thread = try LoopThread(name: "bench-clock")
    }

    func run() throws -> [Metric] {
        let loop = thread!.loop
        let sleeps = self.sleeps
        let onLoop = try awaitDetached(Self.name, preferring: loop.taskExecutor) {
            try await Self.lateness(sleeps, tolerance: nil, clock: loop.clock)
        }
        let tolerant = try awaitDetached(Self.name, preferring: loop.taskExecutor) {
            try await Self.lateness(sleeps, tolerance: .microseconds(500), clock: loop.clock)
        }
        let fromGlobal = try awaitDetached(Self.name, preferring: nil) {
            try await Self.lateness(sleeps, tolerance: nil, clock: loop.clock)
        }
        let continuous = try awaitDetached(Self.name, preferring: nil) {
            try await Self.lateness(sleeps, tolerance: nil, clock: ContinuousClock())
        }
        var metrics: [Metric] = []
        for (name, samples) in [
            ("loop", onLoop), ("loop_tol", tolerant), ("loop_global", fromGlobal), ("continuous", continuous),
        ] {
            let sorted = samples.sorted()
            metrics.append(
                Metric(
                    "\(name) p50", unit: "µs", key: "\(name)_p50_us",
                    value: Double(Percentile.nearestRank(50, of: sorted)) / 1e3, decimals: 1))
            metrics.append(
                Metric(
                    "\(name) p99", unit: "µs", key: "\(name)_p99_us",
                    value: Double(Percentile.nearestRank(99, of: sorted)) / 1e3, decimals: 1))
        }
        return metrics
    }

    func tearDown() {
        thread?.stop()
    }

    /// Sleeps `count` times for 1 ms on `clock`; answers each sleep's lateness in nanoseconds.
    private static func lateness<C: _Concurrency.Clock>(
        _ count: Int, tolerance: Duration?, clock: C
    ) async throws
        -> [Int64]
    where C.Duration == Duration {
        var samples: [Int64] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let deadline = Clock.monotonic() + 1_000_000
            try await clock.sleep(for: .milliseconds(1), tolerance: tolerance)
            samples.append(Clock.monotonic() - deadline)
        }
        return samples
    }

}
