import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// W2 fan-in: 2 producer threads each post 500,000 closures to one consumer loop. A gate releases them together;
/// the clock starts when the first producer is released (its own stamp, so waking the producers from the gate is
/// not timed) and stops when the consumer runs closure 1,000,000. The count must be exact. `reordered` counts every
/// closure that is not the next one expected from its producer.
///
/// `W2t` is the same workload posted through the documented keep-alive worker, `LoopThread.perform`, instead of
/// `Loop.perform` on a plain loop thread. `W2f` and `W2tf` post allocation-free function calls instead of closures
/// (`perform(with:_:)`: a C function and one word, here the producer and sequence number packed), as the C peers do.
/// `LOOP_BENCH_HAND_OVER_LATENCIES=1` turns on the consumer loop's hand-over latencies, so that
/// `scripts/bench/instructions.sh` shows what recording each block's wait costs.
/// `W2p` sends the same packed word as a message of a `LoopPort<Int>` on the plain loop (its handler tallies it).
class FanInBenchmark: Benchmark {
    class var name: String { "fan-in" }
    class var id: String { "W2" }
    class var title: String { "closures from 2 threads to one loop, Loop.perform" }
    /// Whether the consumer is a `LoopThread` fed through its `perform` (W2t, W2tf).
    class var viaLoopThread: Bool { false }
    /// Whether producers post `perform(with:_:)` function calls instead of closures (W2f, W2tf).
    class var postsFunctionCalls: Bool { false }
    /// Whether producers send the packed word to a `LoopPort<Int>` instead (W2p; plain loop only).
    class var sendsToPort: Bool { false }

    private static let producerCount = 2
    private let perProducer: Int
    private var consumer: LoopHost?
    private var consumerThread: LoopThread?
    private var port: LoopPort<Int>?
    private var producers: [JoinableThread] = []
    private var tally: Tally?
    private let ready = WaitCounter()
    private let gate = WaitCounter()

    required init(scale: Int) {
        perProducer = 500_000 / scale
    }

    func setUp() throws {
        let tally = Tally(producers: Self.producerCount, total: Self.producerCount * perProducer)
        let (ready, gate, perProducer) = (ready, gate, perProducer)
        let post: @Sendable (@escaping @Sendable () -> Void) -> Void
        let call: @Sendable (Int) -> Void
        if Self.viaLoopThread {
            let thread = try LoopThread(name: "fan-in")
            consumerThread = thread
            post = { precondition(thread.perform($0)) }
            call = { precondition(thread.perform(with: $0, receiveFanInCall)) }
        } else {
            let consumer = LoopHost()
            self.consumer = consumer
            let loop = consumer.loop
            post = { loop.perform($0) }
            if Self.sendsToPort {
                let port = LoopPort<Int>(capacity: 4096) { packed in
                    tally.receive(producer: packed >> 32, sequence: packed & 0xFFFF_FFFF)
                }
                try loop.add(port)
                self.port = port
                call = { port.send($0) }
            } else {
                call = { loop.perform(with: $0, receiveFanInCall) }
            }
        }
        if getenv("LOOP_BENCH_HAND_OVER_LATENCIES").map({ String(cString: $0) == "1" }) ?? false {
            // Every block's wait recorded, to count what that costs per block (scripts/bench/instructions.sh).
            (consumer?.loop ?? consumerThread!.loop).enableHandOverLatencies()
        }
        let postsFunctionCalls = Self.postsFunctionCalls || Self.sendsToPort
        fanInTally = Unmanaged.passUnretained(tally)  // Kept alive by `self.tally` until tearDown.
        producers = (0..<Self.producerCount).map { producer in
            JoinableThread {
                ready.increment()
                gate.wait()
                tally.released.min(Clock.monotonic(), ordering: .relaxed)
                if postsFunctionCalls {
                    for sequence in 0..<perProducer { call(producer << 32 | sequence) }
                } else {
                    for sequence in 0..<perProducer {
                        post { tally.receive(producer: producer, sequence: sequence) }
                    }
                }
            }
        }
        self.tally = tally
    }

    func run() throws -> [Metric] {
        let tally = tally!
        ready.wait(for: Self.producerCount)
        gate.increment()
        guard tally.done.wait() else {
            throw BenchmarkFailure("\(Self.name): only \(tally.received) of \(tally.total) closures ran within 300 s")
        }
        for producer in producers { producer.join() }
        producers = []
        // Every producer has posted everything: a closure posted now runs after all of theirs.
        let drained = WaitCounter()
        (consumer?.loop ?? consumerThread!.loop).perform { drained.increment() }
        drained.wait()
        guard tally.received == tally.total else {
            throw BenchmarkFailure("\(Self.name): the consumer ran \(tally.received) closures, expected \(tally.total)")
        }
        let elapsed = Double(tally.end - tally.released.load(ordering: .relaxed))
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
        port?.invalidate()
        consumer?.shutDown()
        consumerThread?.stop()
    }
}

/// W2p: W2 with messages of a `LoopPort<Int>` (the packed word, stored inline in the port's ring).
final class FanInPortBenchmark: FanInBenchmark {
    override class var name: String { "fan-in-port" }
    override class var id: String { "W2p" }
    override class var title: String { "port messages from 2 threads to one loop, LoopPort.send" }
    override class var sendsToPort: Bool { true }
}

/// W2t: W2 through `LoopThread.perform`.
final class FanInViaLoopThreadBenchmark: FanInBenchmark {
    override class var name: String { "fan-in-loop-thread" }
    override class var id: String { "W2t" }
    override class var title: String { "closures from 2 threads to one LoopThread, LoopThread.perform" }
    override class var viaLoopThread: Bool { true }
}

/// W2f: W2 with allocation-free function calls (`Loop.perform(with:_:)`).
final class FanInFunctionCallBenchmark: FanInBenchmark {
    override class var name: String { "fan-in-c-function" }
    override class var id: String { "W2f" }
    override class var title: String { "allocation-free calls from 2 threads to one loop, perform(with:_:)" }
    override class var postsFunctionCalls: Bool { true }
}

/// W2tf: W2t with allocation-free function calls (`LoopThread.perform(with:_:)`).
final class FanInFunctionCallViaLoopThreadBenchmark: FanInBenchmark {
    override class var name: String { "fan-in-loop-thread-c-function" }
    override class var id: String { "W2tf" }
    override class var title: String { "allocation-free calls from 2 threads to one LoopThread" }
    override class var viaLoopThread: Bool { true }
    override class var postsFunctionCalls: Bool { true }
}

/// The tally of the W2f/W2tf run in progress, for the C function below (which can capture nothing). Set before the
/// producers start, read by the consumer only.
nonisolated(unsafe) private var fanInTally: Unmanaged<Tally>?

/// W2f's posted function: unpacks the producer and sequence number and tallies them on the consumer's thread.
private let receiveFanInCall: @convention(c) (Int) -> Void = { packed in
    // Borrowed, not retained: `self.tally` keeps it alive, and a retain and release per call (about 40 instructions)
    // would be counted as the loop's cost, where the C peers' callback reads a plain pointer.
    fanInTally!._withUnsafeGuaranteedRef { $0.receive(producer: packed >> 32, sequence: packed & 0xFFFF_FFFF) }
}

/// What the consumer saw. Touched on the consumer's thread only (and read by the main thread after `done` or a
/// later block, which orders the accesses), except `released`, which the producers stamp.
///
/// The fields are `@exclusivity(unchecked)`: the one thread that writes them makes every access exclusive, and the
/// dynamic checks Swift makes otherwise (`swift_beginAccess`, four per call, ~105 instructions) would be timed as
/// part of the loop's cost, where the C peers' tally is plain increments.
private final class Tally: @unchecked Sendable {
    let total: Int
    @exclusivity(unchecked) var received = 0
    /// Closures that were not the next one expected from their producer (its count of closures received so far).
    @exclusivity(unchecked) var reordered = 0
    /// Counts per producer, in memory of its own: an array's uniqueness and bounds checks on each update would be
    /// counted as the loop's cost, where the C peers index a plain array.
    let receivedPerProducer: UnsafeMutablePointer<Int>
    /// The earliest time a producer was released by the gate: the clock's start.
    let released = Atomic<Int64>(.max)
    @exclusivity(unchecked) var end: Int64 = 0
    let done = WaitCounter()

    init(producers: Int, total: Int) {
        self.total = total
        receivedPerProducer = .allocate(capacity: producers)
        receivedPerProducer.initialize(repeating: 0, count: producers)
    }

    deinit {
        receivedPerProducer.deallocate()
    }

    func receive(producer: Int, sequence: Int) {
        if sequence != receivedPerProducer[producer] { reordered += 1 }
        receivedPerProducer[producer] += 1
        received += 1
        if received == total {
            end = Clock.monotonic()
            done.increment()
        }
    }
}
