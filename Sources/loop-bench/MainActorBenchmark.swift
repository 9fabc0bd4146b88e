import RunLoopKit
import Synchronization

/// M, main actor on Loop.main: a detached task awaits a `@MainActor` function N = 100,000 times, one after another,
/// while the main thread runs `Loop.main`. Each call is two hops: to the main actor (Dispatch's main queue, which
/// the main loop drains; it sleeps between calls when the task is slow to come back) and back to the cooperative
/// pool. The clock starts before the first call and stops after the last; the task then stops the loop.
///
/// Runs on the main thread (the runner's), which is the only thread that can run `Loop.main`.
final class MainActorBenchmark: Benchmark {
    static let name = "main-actor-round-trip"
    static let id = "M"
    static let title = "@MainActor round trip on Loop.main"

    private let roundTrips: Int

    init(scale: Int) {
        roundTrips = 100_000 / scale
    }

    func setUp() {}

    func run() throws -> [Metric] {
        let roundTrips = self.roundTrips
        let times = Mutex<(begin: Int64, end: Int64, calls: Int)>((0, 0, 0))
        Task.detached {
            let begin = Clock.monotonic()
            var calls = 0
            for _ in 0..<roundTrips where await MainActorTarget.call() { calls += 1 }
            let end = Clock.monotonic()
            times.withLock { $0 = (begin, end, calls) }
            Loop.main.stop()
        }
        let result = Loop.main.run(in: .default, for: .seconds(300))
        let (begin, end, calls) = times.withLock { $0 }
        guard result == .stopped, calls == roundTrips else {
            throw BenchmarkFailure(
                "main-actor-round-trip: the run answered \(result) after \(calls) of \(roundTrips) calls on the loop")
        }
        let elapsed = Double(end - begin)
        return [
            Metric(
                "throughput", unit: "rt/s", key: "throughput_rt_s",
                value: Double(roundTrips) / elapsed * 1e9, decimals: 0),
            Metric("rtt_mean", unit: "µs", key: "rtt_mean_us", value: elapsed / Double(roundTrips) / 1e3, decimals: 2),
        ]
    }

    func tearDown() {}
}

/// The main-actor side of M.
@MainActor
private enum MainActorTarget {
    /// Answers whether it runs where it should: inside a run of the main loop.
    static func call() -> Bool {
        Loop.main.currentMode != nil
    }
}
