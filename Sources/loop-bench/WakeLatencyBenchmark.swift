import Glibc
import RunLoopKit
import RunLoopKitSystem

/// W5 wake latency: the target loop is idle; a sender wakes every 200 µs on an absolute `clock_nanosleep`
/// schedule, stamps `CLOCK_MONOTONIC` and posts a closure carrying the stamp; the target records now − stamp.
/// 20,000 samples.
///
/// Nothing runs between the stamp and the post: the sender reads its CPU (`sched_getcpu`) just before the stamp.
/// When the sender falls behind (the next deadline has already passed when it is about to sleep: the previous
/// post or a late wake-up took longer than the period), it posts at once without sleeping and then keeps the
/// absolute grid: its next deadline is the first grid point after now, so there is no catch-up burst of posts.
///
/// Metrics: `p50` and `p99` of the latency; `cpu`, process CPU time ÷ wall time over the whole workload, both
/// taken on the main thread from just before the sender is released until after it is joined (an idle loop that
/// really sleeps stays low, a polling one would be near 100%); `samecpu`, the share of samples the target ran on
/// the CPU the sender was on just before its stamp, a placement diagnostic; `behind`, the sends that found their
/// deadline already past.
final class WakeLatencyBenchmark: Benchmark {
    static let name = "wake-latency"
    static let id = "W5"
    static let title = "post to an idle loop every 200 µs, latency to the closure"

    private static let period: Int64 = 200_000
    private let count: Int
    private var target: LoopHost?
    private var sender: JoinableThread?
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
        sender = JoinableThread {
            gate.wait()
            let loop = target.loop
            var next = Clock.monotonic()
            for index in 0..<count {
                next += Self.period
                let now = Clock.monotonic()
                if now < next {
                    Clock.sleep(until: next)
                } else {
                    // Behind: post at once, and move to the last grid point already past, so the next deadline is
                    // the first one ahead (the missed ones are skipped, not posted in a burst).
                    samples.behind += 1
                    next += (now - next) / Self.period * Self.period
                }
                let cpu = GNUExtensions.currentCPU()
                // The measured window: from this stamp to the target's read of the clock. Nothing but the post.
                let stamp = Clock.monotonic()
                loop.perform { samples.record(index, stamp: stamp, senderCPU: cpu) }
            }
        }
        self.target = target
        self.samples = samples
    }

    func run() throws -> [Metric] {
        let samples = samples!
        let (wall, cpu) = try SampledRun.time(releasing: gate, until: samples.done, sender: &sender) {
            "wake-latency: \(samples.received) of \(count) samples arrived within 300 s"
        }
        let sorted = Array(samples.latency).sorted()
        return Metric.latencyFigures(sorted: sorted, cpuNanoseconds: cpu, wallNanoseconds: wall) + [
            Metric(
                "samecpu", unit: "%", key: "samecpu_pct",
                value: Double(samples.sameCPU) / Double(count) * 100, decimals: 1),
            Metric("behind", unit: "sends", key: "behind", value: Double(samples.behind), decimals: 0),
        ]
    }

    func tearDown() {
        gate.increment()  // Lets the sender go if `run()` never did; it then posts into a loop still running.
        sender?.join()
        target?.shutDown()
        samples?.deallocate()
    }
}

/// The latencies. `latency`, `received` and `sameCPU` are written on the target's thread, `behind` on the sender's;
/// the main thread reads them after `done` and the sender's join, which order the accesses.
private final class Samples: @unchecked Sendable {
    let latency: UnsafeMutableBufferPointer<Int64>
    var received = 0
    var sameCPU = 0
    var behind = 0
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
