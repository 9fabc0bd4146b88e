import RunLoopKit

/// S3, wake-up cost against the number of loops (a scaling table, not one of the shared W1–W5): N = 1, 10, 100 and
/// 1,000 loops, each on its own thread (a ``LoopHost``), plus a driver loop. A token goes round the ring driver →
/// loop 1 → … → loop N → driver: each holder posts a closure to the next with `Loop.perform`, and the next is
/// asleep in `epoll_wait`, so every hop is one cross-thread wake-up. With N = 1 that is W1's ping-pong.
///
/// About 20,000 hops per N (`--quick`: 2,000), whole laps only, at least one. Threads are created before the clock
/// starts on the driver; it stops when the token is back on the driver after the last lap. Metrics: ns per wake
/// (`wake_1` … `wake_1000`, elapsed ÷ hops) and `wake_1000/wake_1`.
final class WakeScalingBenchmark: Benchmark {
    static let name = "wake-cost-vs-loops"
    static let id = "S3"
    static let title = "wake cost across 1, 10, 100, 1,000 loops"

    private static let loopCounts = [1, 10, 100, 1_000]
    private let hops: Int

    init(scale: Int) {
        hops = 20_000 / scale
    }

    func setUp() {}

    func run() throws -> [Metric] {
        var perWake: [Double] = []
        for count in Self.loopCounts {
            let hosts = (0...count).map { _ in LoopHost() }
            defer { for host in hosts { host.shutDown() } }
            let laps = max(1, hops / (count + 1))
            let ring = Ring(loops: hosts.map(\.loop), laps: laps)
            ring.start()
            guard ring.done.wait() else {
                throw BenchmarkFailure("wake-cost-vs-loops: the token did not come back within 300 s")
            }
            perWake.append(Double(ring.end - ring.begin) / Double(laps * (count + 1)))
        }
        var metrics = zip(Self.loopCounts, perWake).map { count, value in
            Metric("wake_\(count)", unit: "ns", key: "wake_\(count)_ns", value: value, decimals: 0)
        }
        metrics.append(
            Metric("wake_1000/wake_1", unit: "x", key: "wake_1000_ratio", value: perWake[3] / perWake[0], decimals: 2))
        return metrics
    }

    func tearDown() {}
}

/// The token's ring: `loops[0]` is the driver.
///
/// `lapsLeft`, `begin` and `end` are touched on the driver's thread only (the hops between are ordered by the
/// posts); the main thread reads `begin` and `end` after `done`.
private final class Ring: @unchecked Sendable {
    let loops: [Loop]
    private var lapsLeft: Int
    private(set) var begin: Int64 = 0
    private(set) var end: Int64 = 0
    let done = WaitCounter()

    init(loops: [Loop], laps: Int) {
        self.loops = loops
        lapsLeft = laps
    }

    /// From the main thread: starts the clock on the driver and sends the token on.
    func start() {
        loops[0].perform { [self] in
            begin = Clock.monotonic()
            pass(from: 0)
        }
    }

    /// On `loops[position]`'s thread: hands the token to the next loop.
    private func pass(from position: Int) {
        let next = (position + 1) % loops.count
        loops[next].perform { [self] in arrive(at: next) }
    }

    /// On `loops[position]`'s thread: the token arrived.
    private func arrive(at position: Int) {
        if position == 0 {
            lapsLeft -= 1
            if lapsLeft == 0 {
                end = Clock.monotonic()
                done.increment()
                return
            }
        }
        pass(from: position)
    }
}
