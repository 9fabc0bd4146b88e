// lifecycle-check: RunLoopKit beside swift-service-lifecycle, with the recipes of Docs/Services.md ("Beside
// swift-service-lifecycle"). A ServiceGroup owns SIGTERM; a LoopThread is one of its services, a GracefulShutdown
// another; the loop's figures go to swift-metrics and a stall to swift-log. The program sends itself SIGTERM after
// the worker accepted its work, and checks that the work all ran, that the group returned, what the metrics and the
// log received, and who owned which signal. Prints PASS and exits 0, or FAIL and exits 1.
import Glibc
import Logging
import Metrics
import RunLoopKit
import RunLoopKitServices
import ServiceLifecycle
import Synchronization

let metrics = CapturingMetricsFactory()
MetricsSystem.bootstrap(metrics)
let logs = CapturingLogHandler.Store()
LoggingSystem.bootstrap { _ in CapturingLogHandler(store: logs) }

let failures = Mutex<[String]>([])
func check(_ passed: Bool, _ what: String) {
    print("\(passed ? "ok" : "FAILED"): \(what)")
    if !passed { failures.withLock { $0.append(what) } }
}

/// Waits for `condition` until `timeout` has passed; answers whether it held.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

// Made on the main thread before the first `await`: the worker keeps the main thread's open signal mask, so it can
// take the signals RunLoopKit watches (threads of the concurrency pool block them all).
let worker = try LoopThread(name: "lc-worker")
let logger = Logger(label: "lifecycle-check")
let publisher = try publishMetrics(of: worker.loop, as: "worker", every: .milliseconds(20))
let stalls = try logStalls(of: worker.loop, to: logger, after: .milliseconds(40))
let shutdown = try GracefulShutdown(loop: worker.loop, signals: [])
let exitHandlerRan = Atomic<Bool>(false)
shutdown.onExit { exitHandlerRan.store(true, ordering: .releasing) }

let group = ServiceGroup(
    configuration: ServiceGroupConfiguration(
        // Shut down in reverse order: RunLoopKit's shutdown first, then the worker.
        services: [
            .init(service: LoopThreadService(thread: worker)),
            .init(service: GracefulShutdownService(shutdown: shutdown)),
        ],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger))
let groupRun = Task { try await group.run() }

// 1. The group owns SIGTERM: once Dispatch watches it, RunLoopKit refuses it, and takes SIGUSR1 all the same.
let refused = await waitUntil {
    do throws(LoopError) {
        let source = try SignalSource(signal: SIGTERM) { _, _ in }
        source.invalidate()  // The group had not registered yet: try again.
        return false
    } catch {
        return error.code == .invalidArgument && "\(error)".contains("Dispatch")
    }
}
check(refused, "a SignalSource for SIGTERM is refused once the ServiceGroup watches it")
let usr1 = Atomic<Int>(0)
let usr1Source = try SignalSource(signal: SIGUSR1) { _, count in usr1.add(count, ordering: .relaxed) }
try worker.loop.add(usr1Source)
kill(getpid(), SIGUSR1)
check(await waitUntil { usr1.load(ordering: .relaxed) == 1 }, "a SignalSource for SIGUSR1 on the worker sees it")
usr1Source.invalidate()

// 2. Work accepted before SIGTERM all runs; the first block stalls the loop for the StallMonitor. The stall's pass
// ends before the publisher's next tick, and SIGTERM may stop the worker before that tick: wait until the figures
// are published before sending it, so the check does not race the shutdown.
let accepted = 40
let done = Atomic<Int>(0)
/// Hands the worker a block that keeps its loop busy for `busy`; answers whether the worker accepted it.
func submitBlock(busy: Duration) -> Bool {
    worker.perform {
        let end = Loop.Instant.now + busy
        while Loop.Instant.now < end {}
        done.add(1, ordering: .relaxed)
    }
}
var taken = submitBlock(busy: .milliseconds(120)) ? 1 : 0
/// Whether the publisher has sent the stall on: the longest pass and a delay p99 that show it.
func stallIsPublished() -> Bool {
    let longest = metrics.recorded("worker.longest_pass_seconds").max() ?? 0
    let worstDelay = metrics.recorded("worker.delay_p99_seconds").max() ?? 0
    return longest >= 0.1 && worstDelay >= 0.05
}
check(await waitUntil(stallIsPublished), "the stall was published before SIGTERM")
for _ in 1..<accepted where submitBlock(busy: .milliseconds(5)) { taken += 1 }
check(taken == accepted, "the worker accepted all \(accepted) blocks before SIGTERM")
kill(getpid(), SIGTERM)
let finished = Task { () -> Bool in
    do {
        try await groupRun.value
        return true
    } catch {
        print("the group failed: \(error)")
        return false
    }
}
let returned = await withTaskGroup(of: Bool.self) { tasks in
    tasks.addTask { await finished.value }
    tasks.addTask {
        try? await Task.sleep(for: .seconds(20))
        return false
    }
    let first = await tasks.next() ?? false
    tasks.cancelAll()
    return first
}
check(returned, "the ServiceGroup's run() returned after SIGTERM")
check(done.load(ordering: .relaxed) == accepted, "all \(accepted) accepted blocks ran (\(done.load(ordering: .relaxed)))")
check(worker.isStopped, "the worker stopped")
check(!worker.perform {}, "the stopped worker refuses new work")
check(exitHandlerRan.load(ordering: .acquiring), "GracefulShutdown's exit handler ran, begun by the group")
check(shutdown.isShuttingDown && shutdown.signal == nil, "GracefulShutdown was begun, not signalled")

// 3. The metrics reached swift-metrics: passes and callouts counted, a utilisation between 0 and 1, the stall in the longest pass.
publisher.invalidate()
let passes = metrics.recorded("worker.passes").reduce(0, +)
let callouts = metrics.recorded("worker.callouts").reduce(0, +)
let utilization = metrics.recorded("worker.utilization")
let longest = metrics.recorded("worker.longest_pass_seconds").max() ?? 0
let delays = metrics.recorded("worker.delay_p99_seconds")
check(passes >= 1, "passes published: \(Int(passes))")
// The tick that published the stall came after the stalling block's pass; later blocks may run after the last tick.
check(callouts >= 1, "callouts published, the stalling block among them: \(Int(callouts))")
check(!utilization.isEmpty && utilization.allSatisfy { $0 >= 0 && $0 <= 1 }, "utilisation published in 0...1")
check(longest >= 0.1, "the 120 ms block shows in the longest pass: \(longest) s")
check(delays.contains { $0 >= 0.05 }, "the stall shows in the delay p99: max \(delays.max() ?? 0) s")
// The publisher's own timer was held up by the 120 ms block: its lateness is the timers' hand-over latency.
let timerWaits = metrics.recorded("worker.hand_over_p99_seconds{kind=timers}")
check(timerWaits.contains { $0 >= 0.05 }, "the stall shows in the timers' hand-over p99: max \(timerWaits.max() ?? 0) s")
let blockWaits = metrics.recorded("worker.hand_over_p99_seconds{kind=blocks}")
check(blockWaits.allSatisfy { $0 >= 0 && $0 < 60 }, "blocks' hand-over p99s published in range (\(blockWaits.count))")

// 4. The stall reached swift-log.
stalls.stop()
let stall = logs.all.first { $0.message == "loop stalled" }
check(stall?.level == .warning, "the stall was logged as a warning")
check(stall?.metadata["thread_name"] == "lc-worker", "the log names the stalled thread")
let busy = stall.flatMap { entry in entry.metadata["busy_ms"].flatMap { Int("\($0)") } } ?? 0
check(busy >= 40, "the log says how long the loop was busy: \(busy) ms")

let failed = failures.withLock { $0 }
if failed.isEmpty {
    print("lifecycle-check: PASS: the ServiceGroup owned SIGTERM, the LoopThread finished its \(accepted) blocks, "
        + "metrics and the stall log arrived")
    exit(0)
}
print("lifecycle-check: FAIL: \(failed.joined(separator: "; "))")
exit(1)
