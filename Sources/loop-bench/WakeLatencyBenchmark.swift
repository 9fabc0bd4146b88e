import Glibc
import RunLoopKit

/// W5 wake latency: the target loop is idle; a sender wakes every 200 µs on an absolute `clock_nanosleep`
/// schedule, stamps `CLOCK_MONOTONIC` and posts a closure carrying the stamp; the target records now − stamp.
/// 20,000 samples.
///
/// Metrics: `p50` and `p99` of the latency; `cpu`, process CPU time ÷ wall time over the sampling (an idle loop
/// that really sleeps stays low, a polling one would be near 100%); `samecpu`, the share of samples the target
/// ran on the CPU the sender stamped on (`sched_getcpu`), a placement diagnostic.
final class WakeLatencyBenchmark: Benchmark {
    static let id = "W5"
    static let title = "wake latency"

    private static let period: Int64 = 200_000
    private let count: Int
    private var target: LoopHost?
    private var sender: BenchThread?
    private var samples: Samples?
    private let gate = WaitCounter()

    init(scale: Int) {
        count = 20_000 / scale
    }

    func setUp() {
        let target = LoopHost()
        let samples = Samples(count: count)
        let gate = gate
        let count = count
        sender = BenchThread {
            gate.wait()
            let loop = target.loop
            samples.wallStart = Clock.monotonic()
            samples.cpuStart = Clock.processCPU()
            var next = samples.wallStart
            for index in 0..<count {
                next += Self.period
                Clock.sleep(until: next)
                let stamp = Clock.monotonic()
                let cpu = GNUExtensions.currentCPU()
                loop.perform { samples.record(index, stamp: stamp, senderCPU: cpu) }
            }
        }
        self.target = target
        self.samples = samples
    }

    func run() throws -> [Metric] {
        let samples = samples!
        gate.increment()
        guard samples.done.wait() else {
            throw BenchmarkFailure("W5: \(samples.received) of \(count) samples arrived within 300 s")
        }
        let wall = Clock.monotonic() - samples.wallStart
        let cpu = Clock.processCPU() - samples.cpuStart
        sender?.join()
        sender = nil
        let sorted = Array(samples.latency).sorted()
        return [
            Metric(
                "p50", unit: "µs", key: "p50_us", value: Double(Percentile.nearestRank(50, of: sorted)) / 1e3,
                decimals: 1),
            Metric(
                "p99", unit: "µs", key: "p99_us", value: Double(Percentile.nearestRank(99, of: sorted)) / 1e3,
                decimals: 1),
            Metric("cpu", unit: "%", key: "cpu_pct", value: Double(cpu) / Double(wall) * 100, decimals: 1),
            Metric(
                "samecpu", unit: "%", key: "samecpu_pct",
                value: Double(samples.sameCPU) / Double(count) * 100, decimals: 1),
        ]
    }

    func tearDown() {
        gate.increment()  // Lets the sender go if `run()` never did; it then posts into a loop still running.
        sender?.join()
        target?.shutDown()
        samples?.deallocate()
    }
}

/// The latencies. `latency`, `received` and `sameCPU` are written on the target's thread, the start stamps on the
/// sender's before its first post; the main thread reads them after `done`, which orders the accesses.
private final class Samples: @unchecked Sendable {
    let latency: UnsafeMutableBufferPointer<Int64>
    var received = 0
    var sameCPU = 0
    var wallStart: Int64 = 0
    var cpuStart: Int64 = 0
    let done = WaitCounter()

    init(count: Int) {
        latency = .allocate(capacity: count)
        latency.initialize(repeating: 0)
    }

    func deallocate() {
        latency.deallocate()
    }

    /// On the target's thread: sample `index` arrived.
    func record(_ index: Int, stamp: Int64, senderCPU: CInt) {
        latency[index] = Clock.monotonic() - stamp
        if GNUExtensions.currentCPU() == senderCPU { sameCPU += 1 }
        received += 1
        if received == latency.count { done.increment() }
    }
}
