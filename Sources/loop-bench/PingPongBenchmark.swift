import RunLoopKit

/// W1 ping-pong: threads A and B each run their own loop; A posts a closure to B, whose closure posts one back to
/// A, for N = 100,000 round trips. The clock starts on A at the first post and stops when A runs the Nth reply.
///
/// Run under `taskset -c 0` it is W1@cpu0 (both loops on one CPU), which leaves out the VM's cross-CPU wake-up.
final class PingPongBenchmark: Benchmark {
    static let id = "W1"
    static let title = "ping-pong"

    private let roundTrips: Int
    private var hostA: LoopHost?
    private var hostB: LoopHost?

    init(scale: Int) {
        roundTrips = 100_000 / scale
    }

    func setUp() {
        hostA = LoopHost()
        hostB = LoopHost()
    }

    func run() throws -> [Metric] {
        let elapsed = Double(try Rally.play(a: hostA!.loop, b: hostB!.loop, roundTrips: roundTrips, label: "W1"))
        return [
            Metric(
                "throughput", unit: "rt/s", key: "throughput_rt_s",
                value: Double(roundTrips) / elapsed * 1e9, decimals: 0),
            Metric("rtt_mean", unit: "µs", key: "rtt_mean_us", value: elapsed / Double(roundTrips) / 1e3, decimals: 2),
        ]
    }

    func tearDown() {
        hostA?.shutDown()
        hostB?.shutDown()
    }
}
