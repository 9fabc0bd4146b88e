import Glibc

/// W1–W5 of the shared benchmarks.md on `runtime`, one repetition per process:
/// `<peer> W1|W2|W3|W4|W5 [--quick]` prints one `ID key value` line per metric (loop-bench's keys) and exits 1 when
/// a check fails (W2 inexact count, W3 early timer, W4 a timer fired, a timeout). Loops and threads are made before
/// the clock starts. Call from the main thread; it never returns.
public struct PeerBench<Runtime: PeerRuntime> {
    @usableFromInline let runtime: Runtime
    @usableFromInline let scale: Int
    @usableFromInline let label: String

    /// Parses `arguments` (without the program name), runs the workload and exits.
    @inlinable
    public static func main(runtime: Runtime, name: String, arguments: [String]) -> Never {
        let quick = arguments.contains("--quick")
        let ids = arguments.filter { $0 != "--quick" }
        guard ids.count == 1, ["W1", "W2", "W3", "W4", "W5"].contains(ids[0]) else {
            printError("usage: \(name) W1|W2|W3|W4|W5 [--quick]")
            exit(2)
        }
        let bench = PeerBench(runtime: runtime, scale: quick ? 10 : 1, label: ids[0] + GNU.labelSuffix)
        let failure: String?
        switch ids[0] {
        case "W1": failure = bench.pingPong()
        case "W2": failure = bench.fanIn()
        case "W3": failure = bench.timers()
        case "W4": failure = bench.churn()
        default: failure = bench.wakeLatency()
        }
        if let failure { printError("\(name) \(bench.label) FAILED: \(failure)") }
        fflush(nil)
        _exit(failure == nil ? 0 : 1)  // The loop threads still run: leave without tearing them down.
    }

    @inlinable
    init(runtime: Runtime, scale: Int, label: String) {
        self.runtime = runtime
        self.scale = scale
        self.label = label
    }

    @inlinable
    func emit(_ key: String, _ value: Double, decimals: Int) {
        print("\(label) \(key) \(formatted(value, decimals: decimals))")
    }

    // MARK: W1 ping-pong

    /// State touched on A's thread only; the main thread reads it after `done`.
    @usableFromInline
    final class Rally: @unchecked Sendable {
        @usableFromInline let runtime: Runtime
        @usableFromInline let a: Runtime.Loop
        @usableFromInline let b: Runtime.Loop
        @usableFromInline var remaining: Int
        @usableFromInline var begin: Int64 = 0
        @usableFromInline var end: Int64 = 0
        @usableFromInline let done = Latch()

        @inlinable
        init(runtime: Runtime, a: Runtime.Loop, b: Runtime.Loop, roundTrips: Int) {
            self.runtime = runtime
            self.a = a
            self.b = b
            remaining = roundTrips
        }

        @inlinable
        func start() {
            begin = Clock.monotonic()
            serve()
        }

        @inlinable
        func serve() {
            runtime.post(to: b) { [self] in
                runtime.post(to: a) { [self] in reply() }
            }
        }

        @inlinable
        func reply() {
            remaining -= 1
            if remaining > 0 {
                serve()
            } else {
                end = Clock.monotonic()
                done.add()
            }
        }
    }

    @inlinable
    func pingPong() -> String? {
        let trips = 100_000 / scale
        let rally = Rally(runtime: runtime, a: runtime.startLoop(), b: runtime.startLoop(), roundTrips: trips)
        runtime.post(to: rally.a) { rally.start() }
        guard rally.done.wait() else { return "the rally did not finish within 300 s" }
        let elapsed = Double(rally.end - rally.begin)
        emit("throughput_rt_s", Double(trips) / elapsed * 1e9, decimals: 0)
        emit("rtt_mean_us", elapsed / Double(trips) / 1e3, decimals: 2)
        return nil
    }

    // MARK: W2 fan-in

    /// What the consumer saw: touched on its thread only, except `released` (one slot per producer). Its fields
    /// skip Swift's dynamic exclusivity checks, which that one thread makes needless and which would otherwise be
    /// timed as the runtime's cost (the C peers' tally is plain increments).
    @usableFromInline
    final class Tally: @unchecked Sendable {
        @usableFromInline let total: Int
        @usableFromInline @exclusivity(unchecked) var received = 0
        @usableFromInline @exclusivity(unchecked) var reordered = 0
        @usableFromInline @exclusivity(unchecked) var expected = [0, 0]
        @usableFromInline @exclusivity(unchecked) var end: Int64 = 0
        @usableFromInline let done = Latch()
        @usableFromInline let ready = Latch()
        @usableFromInline let gate = Latch()
        @usableFromInline let released = UnsafeMutablePointer<Int64>.allocate(capacity: 2)

        @inlinable
        init(total: Int) {
            self.total = total
            released.initialize(repeating: .max, count: 2)
        }

        @inlinable
        func receive(producer: Int, sequence: Int) {
            if sequence != expected[producer] { reordered += 1 }
            expected[producer] += 1
            received += 1
            if received == total {
                end = Clock.monotonic()
                done.add()
            }
        }
    }

    @inlinable
    func fanIn() -> String? {
        let perProducer = 500_000 / scale
        let tally = Tally(total: 2 * perProducer)
        let consumer = runtime.startLoop()
        let runtime = runtime
        let producers = (0..<2).map { producer in
            PeerThread {
                tally.ready.add()
                tally.gate.wait(seconds: 3600)
                // Each producer stamps its own release; the earliest is the clock's start (read after both joined).
                tally.released[producer] = Clock.monotonic()
                for sequence in 0..<perProducer {
                    runtime.post(to: consumer) { tally.receive(producer: producer, sequence: sequence) }
                }
            }
        }
        tally.ready.wait(for: 2)
        tally.gate.add()
        guard tally.done.wait() else { return "the consumer did not run every closure within 300 s" }
        for producer in producers { producer.join() }
        // Everything is posted: a closure posted now runs after all of it, so extra runs would show.
        let drained = Latch()
        runtime.post(to: consumer) { drained.add() }
        drained.wait()
        guard tally.received == tally.total else {
            return "the consumer ran \(tally.received) closures, expected \(tally.total)"
        }
        let elapsed = Double(tally.end - min(tally.released[0], tally.released[1]))
        emit("throughput_ops_s", Double(tally.total) / elapsed * 1e9, decimals: 0)
        emit("reordered", Double(tally.reordered), decimals: 0)
        return nil
    }

    // MARK: W3 timers

    /// The scheduling loop's stamps: written on the loop's thread, read after the log's `done`.
    @usableFromInline
    final class Stamps: @unchecked Sendable {
        @usableFromInline var start: Int64 = 0
        @usableFromInline var end: Int64 = 0
        @usableFromInline init() {}
    }

    @inlinable
    func timers() -> String? {
        let count = 100_000 / scale
        let loop = runtime.startLoop()
        let offsets = splitMixOffsets(count: count, in: 0..<500_000_000)
        let log = FireLog(count: count, recording: true)
        let stamps = Stamps()
        let runtime = runtime
        runtime.post(to: loop) {
            stamps.start = Clock.monotonic()
            for index in 0..<count {
                let deadline = stamps.start + offsets[index]
                log.deadlines[index] = deadline
                _ = runtime.schedule(on: loop, at: deadline, log: log, index: index)
            }
            stamps.end = Clock.monotonic()
        }
        guard log.done.wait(seconds: 120) else { return "not every timer fired within 120 s" }
        let all = Array(log.lateness).sorted()
        let steady = (0..<count).filter { log.deadlines[$0] >= stamps.end }.map { log.lateness[$0] }.sorted()
        let early = all.prefix { $0 < 0 }.count
        emit("schedule_ns", Double(stamps.end - stamps.start) / Double(count), decimals: 1)
        emit("late_p50_us", Double(nearestRank(50, of: all)) / 1e3, decimals: 1)
        emit("late_p99_us", Double(nearestRank(99, of: all)) / 1e3, decimals: 1)
        emit("late_p99_steady_us", Double(nearestRank(99, of: steady)) / 1e3, decimals: 1)
        emit("early", Double(early), decimals: 0)
        return early == 0 ? nil : "\(early) timers fired before their deadline"
    }

    // MARK: W4 churn

    @inlinable
    func churn() -> String? {
        let iterations = 1_000_000 / scale
        let window = 10_000
        let loop = runtime.startLoop()
        let offsets = splitMixOffsets(count: iterations, in: 10_000_000_000..<20_000_000_000)
        let log = FireLog(count: .max, recording: false)
        let stamps = Stamps()
        let finished = Latch()
        let runtime = runtime
        runtime.post(to: loop) {
            var live = [Runtime.Timer?](repeating: nil, count: window)
            stamps.start = Clock.monotonic()
            for index in 0..<iterations {
                let slot = index % window
                if let old = live[slot] { runtime.cancel(old, on: loop) }
                live[slot] = runtime.schedule(on: loop, at: stamps.start + offsets[index], log: log, index: index)
            }
            for timer in live { if let timer { runtime.cancel(timer, on: loop) } }
            stamps.end = Clock.monotonic()
            finished.add()
        }
        guard finished.wait() else { return "the churn did not finish within 300 s" }
        // Read the fire count on the loop's thread, after the churn.
        let fired = Latch()
        nonisolated(unsafe) var firedCount = 0
        runtime.post(to: loop) {
            firedCount = log.fired
            fired.add()
        }
        fired.wait()
        emit("pair_ns", Double(stamps.end - stamps.start) / Double(iterations), decimals: 1)
        return firedCount == 0 ? nil : "\(firedCount) timers fired"
    }

    // MARK: W5 wake latency

    /// The samples: written on the target's thread, the start stamps on the sender's before its first post.
    @usableFromInline
    final class Samples: @unchecked Sendable {
        @usableFromInline let latency: UnsafeMutableBufferPointer<Int64>
        @usableFromInline var received = 0
        @usableFromInline var sameCPU = 0
        @usableFromInline var wallStart: Int64 = 0
        @usableFromInline var cpuStart: Int64 = 0
        @usableFromInline let done = Latch()
        @usableFromInline let gate = Latch()

        @inlinable
        init(count: Int) {
            latency = .allocate(capacity: count)
            latency.initialize(repeating: 0)
        }

        @inlinable
        func record(_ index: Int, stamp: Int64, senderCPU: CInt) {
            latency[index] = Clock.monotonic() - stamp
            if GNU.currentCPU() == senderCPU { sameCPU += 1 }
            received += 1
            if received == latency.count { done.add() }
        }
    }

    @inlinable
    func wakeLatency() -> String? {
        let count = 20_000 / scale
        let period: Int64 = 200_000
        let target = runtime.startLoop()
        let samples = Samples(count: count)
        let runtime = runtime
        let sender = PeerThread {
            samples.gate.wait(seconds: 3600)
            samples.wallStart = Clock.monotonic()
            samples.cpuStart = Clock.processCPU()
            var next = samples.wallStart
            for index in 0..<count {
                next += period
                Clock.sleep(until: next)
                let cpu = GNU.currentCPU()  // Before the stamp: nothing runs between the stamp and the post.
                let stamp = Clock.monotonic()
                runtime.post(to: target) { samples.record(index, stamp: stamp, senderCPU: cpu) }
            }
        }
        samples.gate.add()
        guard samples.done.wait() else { return "not every sample arrived within 300 s" }
        let wall = Clock.monotonic() - samples.wallStart
        let cpu = Clock.processCPU() - samples.cpuStart
        sender.join()
        let sorted = Array(samples.latency).sorted()
        emit("p50_us", Double(nearestRank(50, of: sorted)) / 1e3, decimals: 1)
        emit("p99_us", Double(nearestRank(99, of: sorted)) / 1e3, decimals: 1)
        emit("cpu_pct", Double(cpu) / Double(wall) * 100, decimals: 1)
        emit("samecpu_pct", Double(samples.sameCPU) / Double(count) * 100, decimals: 1)
        return nil
    }
}
