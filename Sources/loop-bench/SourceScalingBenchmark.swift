import RunLoopKit
import RunLoopKitSystem

/// S1, pass cost against registered sources (a scaling table, not one of the shared W1–W5): on one loop thread,
/// 1, 100 and then 10,000 custom sources are registered in the default mode, and one of them is signalled per pass:
/// its perform counts the pass and signals the source again, so every pass performs exactly one source and never
/// sleeps. The others are never signalled.
///
/// Metrics: ns per pass with each count (`pass_1`, `pass_100`, `pass_10k`), and the ratio of each to 1 registered,
/// which stays near 1 when a pass costs what is signalled, not what is registered. 200,000 passes per count
/// (`--quick`: 20,000), after 1,000 untimed warm-up passes.
final class SourceScalingBenchmark: Benchmark {
    static let name = "pass-cost-vs-sources"
    static let id = "S1"
    static let title = "pass cost with 1, 100, 10,000 registered sources"

    /// The registered source counts, and the names their figures get.
    private static let counts: [(count: Int, name: String)] = [(1, "1"), (100, "100"), (10_000, "10k")]
    private let passes: Int

    init(scale: Int) {
        passes = 200_000 / scale
    }

    func setUp() {}

    func run() throws -> [Metric] {
        var perPass: [Double] = []
        for (count, _) in Self.counts {
            perPass.append(try SignalledPasses.measure(passes: passes, registered: count))
        }
        var metrics: [Metric] = []
        for (index, (_, name)) in Self.counts.enumerated() {
            metrics.append(
                Metric("pass_\(name)", unit: "ns", key: "pass_\(name)_ns", value: perPass[index], decimals: 0))
        }
        for (index, (_, name)) in Self.counts.enumerated().dropFirst() {
            metrics.append(
                Metric(
                    "pass_\(name)/pass_1", unit: "x", key: "pass_\(name)_ratio", value: perPass[index] / perPass[0],
                    decimals: 2))
        }
        return metrics
    }

    func tearDown() {}
}

/// One measurement of S1 on a thread of its own.
///
/// Threading: created and read by the main thread; `drive()` runs on the measuring thread and everything it
/// touches is confined to that thread until `done` is incremented.
private final class SignalledPasses: @unchecked Sendable {
    private let passes: Int
    private let registered: Int
    private var start: Int64 = 0
    private var end: Int64 = 0
    private var performed = 0
    private var limit = 0
    private var failure: BenchmarkFailure?
    private let done = WaitCounter()

    private init(passes: Int, registered: Int) {
        self.passes = passes
        self.registered = registered
    }

    /// Runs `passes` passes with `registered` sources on a new thread; answers nanoseconds per pass.
    static func measure(passes: Int, registered: Int) throws -> Double {
        let measurement = SignalledPasses(passes: passes, registered: registered)
        let thread = JoinableThread { measurement.drive() }
        guard measurement.done.wait() else {
            throw BenchmarkFailure("pass-cost-vs-sources: the passes did not finish within 300 s")
        }
        thread.join()
        if let failure = measurement.failure { throw failure }
        return Double(measurement.end - measurement.start) / Double(passes)
    }

    /// On the measuring thread: registers the sources, runs the passes, invalidates everything.
    private func drive() {
        defer { done.increment() }
        let loop = Loop.current
        var sources: [LoopSource] = []
        defer { for source in sources { source.invalidate() } }
        do {
            let active = LoopSource { [self] source in
                performed += 1
                if performed == limit { loop.stop() } else { source.signal() }
            }
            try loop.add(active)
            sources.append(active)
            for index in 1..<registered {
                let idle = LoopSource(order: index) { _ in }
                try loop.add(idle)
                sources.append(idle)
            }
            // Warm-up, so first-use costs (mode tables, pools) are not timed.
            (performed, limit) = (0, min(passes, 1_000))
            active.signal()
            _ = loop.run(in: .default, for: .seconds(300))
            (performed, limit) = (0, passes)
            active.signal()
            start = Clock.monotonic()
            let result = loop.run(in: .default, for: .seconds(300))
            end = Clock.monotonic()
            guard result == .stopped, performed == passes else {
                failure = BenchmarkFailure(
                    "pass-cost-vs-sources: the run returned \(result) after \(performed) of \(passes) passes")
                return
            }
        } catch {
            failure = BenchmarkFailure("pass-cost-vs-sources: adding the sources failed: \(error)")
        }
    }
}
