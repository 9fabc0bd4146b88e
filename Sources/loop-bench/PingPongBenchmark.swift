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
        let rally = Rally(a: hostA!.loop, b: hostB!.loop, roundTrips: roundTrips)
        hostA!.loop.perform { rally.start() }
        guard rally.done.wait() else { throw BenchmarkFailure("W1: the rally did not finish within 300 s") }
        let elapsed = Double(rally.end - rally.begin)
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

/// The round trips in flight. `remaining`, `begin` and `end` are touched on A's thread only; the main thread
/// reads `begin` and `end` after `done`, which orders the accesses.
private final class Rally: @unchecked Sendable {
    let a: Loop
    let b: Loop
    var remaining: Int
    var begin: Int64 = 0
    var end: Int64 = 0
    let done = WaitCounter()

    init(a: Loop, b: Loop, roundTrips: Int) {
        self.a = a
        self.b = b
        remaining = roundTrips
    }

    /// On A: starts the clock and sends the first ball.
    func start() {
        begin = Clock.monotonic()
        serve()
    }

    /// On A: posts a closure to B that posts the reply back to A.
    private func serve() {
        b.perform { [self] in
            a.perform { [self] in reply() }
        }
    }

    /// On A: one round trip done.
    private func reply() {
        remaining -= 1
        if remaining > 0 {
            serve()
        } else {
            end = Clock.monotonic()
            done.increment()
        }
    }
}
