import RunLoopKit
import Synchronization

/// W2 fan-in: 2 producer threads each post 500,000 closures to one consumer loop. A gate releases them together
/// and starts the clock; the clock stops when the consumer runs closure 1,000,000. The count must be exact.
final class FanInBenchmark: Benchmark {
    static let id = "W2"
    static let title = "fan-in"

    private static let producerCount = 2
    private let perProducer: Int
    private var consumer: LoopHost?
    private var producers: [BenchThread] = []
    private var tally: Tally?
    private let ready = WaitCounter()
    private let gate = WaitCounter()

    init(scale: Int) {
        perProducer = 500_000 / scale
    }

    func setUp() {
        let consumer = LoopHost()
        let tally = Tally(producers: Self.producerCount, total: Self.producerCount * perProducer)
        let (ready, gate, perProducer) = (ready, gate, perProducer)
        producers = (0..<Self.producerCount).map { producer in
            BenchThread {
                ready.increment()
                gate.wait()
                let loop = consumer.loop
                for sequence in 0..<perProducer {
                    loop.perform { tally.receive(producer: producer, sequence: sequence) }
                }
            }
        }
        self.consumer = consumer
        self.tally = tally
    }

    func run() throws -> [Metric] {
        let tally = tally!
        ready.wait(for: Self.producerCount)
        tally.begin = Clock.monotonic()
        gate.increment()
        guard tally.done.wait() else {
            throw BenchmarkFailure("W2: only \(tally.received) of \(tally.total) closures ran within 300 s")
        }
        for producer in producers { producer.join() }
        producers = []
        // Every producer has posted everything: a closure posted now runs after all of theirs.
        let drained = WaitCounter()
        consumer!.loop.perform { drained.increment() }
        drained.wait()
        guard tally.received == tally.total else {
            throw BenchmarkFailure("W2: the consumer ran \(tally.received) closures, expected \(tally.total)")
        }
        let elapsed = Double(tally.end - tally.begin)
        return [
            Metric(
                "throughput", unit: "ops/s", key: "throughput_ops_s",
                value: Double(tally.total) / elapsed * 1e9, decimals: 0),
            Metric("reordered", unit: "", key: "reordered", value: Double(tally.reordered), decimals: 0),
        ]
    }

    func tearDown() {
        gate.increment()  // Lets the producers go if `run()` never did, so they can be joined.
        for producer in producers { producer.join() }
        consumer?.shutDown()
    }
}

/// What the consumer saw. Touched on the consumer's thread only (and read by the main thread after `done` or a
/// later block, which orders the accesses); `begin` is written before the gate opens.
private final class Tally: @unchecked Sendable {
    let total: Int
    var received = 0
    /// Closures whose sequence number is not above the last one seen from the same producer.
    var reordered = 0
    var lastSequence: [Int]
    var begin: Int64 = 0
    var end: Int64 = 0
    let done = WaitCounter()

    init(producers: Int, total: Int) {
        self.total = total
        lastSequence = Array(repeating: -1, count: producers)
    }

    func receive(producer: Int, sequence: Int) {
        if sequence <= lastSequence[producer] {
            reordered += 1
        } else {
            lastSequence[producer] = sequence
        }
        received += 1
        if received == total {
            end = Clock.monotonic()
            done.increment()
        }
    }
}
