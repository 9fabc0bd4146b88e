import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Pass cost (not one of the shared W1–W5): what one full pass of a busy loop costs, with one item of each kind
/// and again with 10,000 idle sources and 10,000 idle timers registered beside them.
///
/// Every pass does the same work on the loop's own thread: the six observer activities, one signalled custom
/// source (its perform counts the pass), a poll of `epoll_wait` that finds a pipe readable, and the pipe's
/// descriptor source, which reads the byte, writes it back and signals the custom source for the next pass. A
/// repeating timer every 100 µs fires now and then. So the pass never sleeps and never needs the eventfd.
///
/// Metrics: `pass` (ns per pass, one item of each kind), `crowded` (the same with the idle items registered) and
/// `crowded/pass`, which stays near 1 when a pass costs what is signalled or due, not what is registered; then
/// `monitored` (the plain pass with a `StallMonitor` watching the loop) and `monitored/pass`, the monitor's cost.
///
/// `LOOP_BENCH_PASSES` overrides the number of passes (default 200,000; `--quick` divides it by 10), which
/// `scripts/check/alloc-check.sh` uses to count heap allocations per pass under valgrind. `LOOP_BENCH_PASS_HANDLER=1`
/// gives every measured loop a pass handler (`Loop.reportPasses(to:)`) that adds up the passes' durations, so
/// `scripts/bench/instructions.sh pass-cost` and `scripts/check/alloc-check.sh` show what a handler costs.
/// `LOOP_BENCH_FLIGHT_RECORDER=1` turns on every measured loop's flight recorder (64 passes of 64 callouts) and
/// prints the callouts the measured loops made to standard error, so the same scripts show what recording costs
/// per callout and that a recorded pass allocates nothing.
final class PassCostBenchmark: Benchmark {
    static let name = "pass-cost"
    static let id = "P"
    static let title = "ns per loop pass, with 1 and with 10,000 idle items"

    /// Idle sources and idle timers registered for the `crowded` figure.
    static let idleItems = 10_000
    private let passes: Int

    init(scale: Int) {
        let requested = getenv("LOOP_BENCH_PASSES").flatMap { Int(String(cString: $0)) }
        passes = requested ?? 200_000 / scale
    }

    func setUp() {}

    func run() throws -> [Metric] {
        let plain = try PassDriver.measure(passes: passes, idleItems: 0)
        let crowded = try PassDriver.measure(passes: passes, idleItems: Self.idleItems)
        let monitored = try PassDriver.measure(passes: passes, idleItems: 0, monitored: true)
        return [
            Metric("pass", unit: "ns", key: "pass_ns", value: plain, decimals: 0),
            Metric("crowded", unit: "ns", key: "crowded_pass_ns", value: crowded, decimals: 0),
            Metric("crowded/pass", unit: "x", key: "crowded_ratio", value: crowded / plain, decimals: 2),
            Metric("monitored", unit: "ns", key: "monitored_pass_ns", value: monitored, decimals: 0),
            Metric("monitored/pass", unit: "x", key: "monitored_ratio", value: monitored / plain, decimals: 2),
        ]
    }

    func tearDown() {}
}

/// One measurement: a thread whose loop runs `passes` passes as described on ``PassCostBenchmark``.
///
/// Threading: created and read by the main thread; `drive()` runs on the measuring thread and everything it
/// touches is confined to that thread until `done` is incremented.
private final class PassDriver: @unchecked Sendable {
    private let passes: Int
    private let idleItems: Int
    private let monitored: Bool
    private var start: Int64 = 0
    private var end: Int64 = 0
    private var failure: BenchmarkFailure?
    private let done = WaitCounter()

    private init(passes: Int, idleItems: Int, monitored: Bool) {
        self.passes = passes
        self.idleItems = idleItems
        self.monitored = monitored
    }

    /// Runs the passes on a new thread, watched by a `StallMonitor` if `monitored`; answers nanoseconds per pass.
    static func measure(passes: Int, idleItems: Int, monitored: Bool = false) throws -> Double {
        let driver = PassDriver(passes: passes, idleItems: idleItems, monitored: monitored)
        let thread = JoinableThread { driver.drive() }
        guard driver.done.wait() else { throw BenchmarkFailure("pass-cost: the passes did not finish within 300 s") }
        thread.join()
        if let failure = driver.failure { throw failure }
        return Double(driver.end - driver.start) / Double(passes)
    }

    /// On the measuring thread: builds the items, runs the passes, tears everything down.
    private func drive() {
        defer { done.increment() }
        var ends: [CInt] = [-1, -1]
        guard pipe(&ends) == 0 else {
            failure = BenchmarkFailure("pass-cost: pipe failed, errno \(errno)")
            return
        }
        defer {
            close(ends[0])
            close(ends[1])
        }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let loop = Loop.current
        let counter = PassCounter(limit: passes, loop: loop)
        let handled = PassDurations()
        if getenv("LOOP_BENCH_PASS_HANDLER").map({ String(cString: $0) == "1" }) ?? false {
            loop.reportPasses { figures in handled.add(Int64(figures.number)) }
        }
        defer { loop.reportPasses(to: nil) }
        let recorded = getenv("LOOP_BENCH_FLIGHT_RECORDER").map({ String(cString: $0) == "1" }) ?? false
        if recorded {
            do { try loop.enableFlightRecorder() } catch { failure = BenchmarkFailure("pass-cost: \(error)") }
        }
        defer { if recorded { loop.disableFlightRecorder() } }
        let calloutsBefore = loop.metrics.handled
        defer {
            if recorded {
                let made = loop.metrics.handled - calloutsBefore
                let total =
                    made.sourcesPerformed + made.descriptorReports + made.timersFired + made.callbacksRun
                    + made.observerCalls + made.blocksRun + made.jobsRun + made.mainQueueDrains
                let line = Array("pass-cost: \(total) callouts with the flight recorder on\n".utf8)
                _ = write(STDERR_FILENO, line, line.count)
            }
        }
        var items: [() -> Void] = []
        defer { for invalidate in items { invalidate() } }
        do {
            let source = LoopSource { _ in counter.count() }
            try loop.add(source)
            items.append(source.invalidate)
            let descriptor = try FileDescriptorSource(descriptor: readEnd) { _, _ in
                var byte: UInt8 = 0
                _ = read(readEnd, &byte, 1)
                _ = write(writeEnd, &byte, 1)
                source.signal()
            }
            try loop.add(descriptor)
            items.append(descriptor.invalidate)
            let observer = LoopObserver(activities: .all) { _, _ in counter.observed &+= 1 }
            try loop.add(observer)
            items.append(observer.invalidate)
            let timer = try LoopTimer(after: .microseconds(100), repeating: .microseconds(100)) { _ in
                counter.fired &+= 1
            }
            try loop.add(timer)
            items.append(timer.invalidate)
            for index in 0..<idleItems {
                let idleSource = LoopSource(order: index) { _ in }
                try loop.add(idleSource)
                items.append(idleSource.invalidate)
                let idleTimer = try LoopTimer(after: .seconds(3600 + Int64(index))) { _ in }
                try loop.add(idleTimer)
                items.append(idleTimer.invalidate)
            }
            // A 50 ms threshold the 2 µs passes never reach: the monitor only records activities here.
            let monitor = monitored ? try StallMonitor(loop: loop, threshold: .milliseconds(50)) { _ in } : nil
            defer { monitor?.stop() }
            var byte: UInt8 = 1
            guard write(writeEnd, &byte, 1) == 1 else {
                failure = BenchmarkFailure("pass-cost: write to the pipe failed, errno \(errno)")
                return
            }
            // A short warm-up run, so first-use costs (mode tables, epoll registration) are not timed.
            counter.reset(limit: min(passes, 1_000))
            _ = loop.run(in: .default, for: .seconds(300))
            counter.reset(limit: passes)
            start = Clock.monotonic()
            let result = loop.run(in: .default, for: .seconds(300))
            end = Clock.monotonic()
            guard result == .stopped, counter.passes == passes else {
                failure = BenchmarkFailure(
                    "pass-cost: the run returned \(result) after \(counter.passes) of \(passes) passes")
                return
            }
        } catch {
            failure = BenchmarkFailure("pass-cost: setting up the items failed: \(error)")
        }
    }
}

/// Counts passes and stops the loop at the limit. Loop-thread confined.
private final class PassCounter: @unchecked Sendable {
    private(set) var passes = 0
    private var limit: Int
    private let loop: Loop
    /// Observer calls and timer fires, kept so the optimiser cannot drop the handlers.
    var observed = 0
    var fired = 0

    init(limit: Int, loop: Loop) {
        self.limit = limit
        self.loop = loop
    }

    func reset(limit: Int) {
        passes = 0
        self.limit = limit
    }

    func count() {
        passes += 1
        if passes == limit { loop.stop() }
    }
}

/// The sum of the passes' durations a pass handler was told, so the optimiser keeps the handler's work.
private final class PassDurations: Sendable {
    private let nanoseconds = Atomic<Int64>(0)

    /// Adds `duration` nanoseconds; called on the loop's thread only, so a load and a store.
    func add(_ duration: Int64) {
        nanoseconds.store(nanoseconds.load(ordering: .relaxed) &+ duration, ordering: .relaxed)
    }
}
