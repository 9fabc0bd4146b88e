import RunLoopKit

/// W1 ping-pong: threads A and B each run their own loop; A posts a closure to B, whose closure posts one back to
/// A, for N = 100,000 round trips. The clock starts on A at the first post and stops when A runs the Nth reply.
///
/// Run under `taskset -c 0` it is W1@cpu0 (both loops on one CPU), which leaves out the VM's cross-CPU wake-up.
///
/// `W1t` is the same with A and B `LoopThread`s posted to with `LoopThread.perform`, the documented keep-alive
/// worker.
class PingPongBenchmark: Benchmark {
    class var name: String { "ping-pong" }
    class var id: String { "W1" }
    class var title: String { "round trips between two loops, Loop.perform" }
    /// Whether A and B are `LoopThread`s fed through `LoopThread.perform` (W1t).
    class var viaLoopThread: Bool { false }

    private let roundTrips: Int
    private var hostA: LoopHost?
    private var hostB: LoopHost?
    private var threadA: LoopThread?
    private var threadB: LoopThread?

    required init(scale: Int) {
        roundTrips = 100_000 / scale
    }

    func setUp() throws {
        if Self.viaLoopThread {
            threadA = try LoopThread(name: "ping")
            threadB = try LoopThread(name: "pong")
        } else {
            hostA = LoopHost()
            hostB = LoopHost()
        }
    }

    func run() throws -> [Metric] {
        let (a, b): (Rally.Player, Rally.Player) =
            if let threadA, let threadB {
                (.thread(threadA), .thread(threadB))
            } else {
                (.loop(hostA!.loop), .loop(hostB!.loop))
            }
        let elapsed = Double(try Rally.play(a: a, b: b, roundTrips: roundTrips, label: Self.name))
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
        threadA?.stop()
        threadB?.stop()
    }
}

/// W1t: W1 between two `LoopThread`s, through `LoopThread.perform`.
final class PingPongViaLoopThreadBenchmark: PingPongBenchmark {
    override class var name: String { "ping-pong-loop-thread" }
    override class var id: String { "W1t" }
    override class var title: String { "round trips between two LoopThreads, LoopThread.perform" }
    override class var viaLoopThread: Bool { true }
}
