import Glibc
import RunLoopKit

/// T, task executor hop: a nonisolated async function run on a `LoopThread` from a task on the global executor,
/// N = 100,000 times one after another, four ways side by side in one run, and a fan-in of 16 tasks.
///
/// - `preferred`: each call is `withTaskExecutorPreference(thread.loop.taskExecutor) { await work() }`: the function runs on the
///   loop's thread, and the caller continues on the global executor (a hop there and back).
/// - `thread_run`: the same round trip through `await thread.run { }`, the baseline (target: `preferred` within 1.2×).
/// - `loop_actor`: an actor whose executor is the thread's loop, its method awaited.
/// - `global`: the same function called with no preference: it runs on the global executor, no hop at all (the
///   floor of the call itself).
/// - `fanin_loop_actor` / `fanin_default_actor`: 16 tasks call one actor 10,000 times each (N/10 with `--quick`),
///   the actor on the thread's loop vs on the default executor; calls per second, with the loop's jobs per pass
///   and the share of the fan-in it was awake (its `Loop.Metrics`): how well it batches. `LOOP_BENCH_T_FANIN_ONLY=1` runs
///   the loop actor's fan-in alone (for strace and perf).
final class TaskExecutorHopBenchmark: Benchmark {
    static let name = "task-executor-hop"
    static let id = "T"
    static let title = "withTaskExecutorPreference vs LoopThread.run; 16-task fan-in"

    private let calls: Int
    private var thread: LoopThread?

    init(scale: Int) {
        calls = 100_000 / scale
    }

    func setUp() throws {
        thread = try LoopThread(name: "bench-task-executor")
    }

    func run() throws -> [Metric] {
        let thread = self.thread!
        let loop = thread.loop
        let calls = self.calls
        let warmUp = max(calls / 10, 100)
        let perTask = calls / 10
        if getenv("LOOP_BENCH_T_FANIN_ONLY") != nil {  // For strace and perf: the fan-in alone.
            let elapsed = try awaitDetached(Self.name) {
                await Self.fanIn(HopTarget(loop: loop), tasks: 16, callsEach: perTask)
            }
            return [
                Metric(
                    "fanin_loop_actor", unit: "calls/s", key: "fanin_loop_actor_calls_s",
                    value: Double(16 * perTask) / Double(elapsed) * 1e9, decimals: 0)
            ]
        }

        let onLoop = loop.taskExecutor
        let preferred = try awaitDetached(Self.name) {
            for _ in 0..<warmUp { _ = await withTaskExecutorPreference(onLoop) { await work(1) } }
            let begin = Clock.monotonic()
            for index in 0..<calls { _ = await withTaskExecutorPreference(onLoop) { await work(index) } }
            return Clock.monotonic() - begin
        }
        let threadRun = try awaitDetached(Self.name) {
            for _ in 0..<warmUp { _ = try? await thread.run { workSynchronously(1) } }
            let begin = Clock.monotonic()
            for index in 0..<calls { _ = try? await thread.run { workSynchronously(index) } }
            return Clock.monotonic() - begin
        }
        let loopActor = try awaitDetached(Self.name) {
            let actor = HopTarget(loop: loop)
            for _ in 0..<warmUp { _ = await actor.work(1) }
            let begin = Clock.monotonic()
            for index in 0..<calls { _ = await actor.work(index) }
            return Clock.monotonic() - begin
        }
        let global = try awaitDetached(Self.name) {
            for _ in 0..<warmUp { _ = await work(1) }
            let begin = Clock.monotonic()
            for index in 0..<calls { _ = await work(index) }
            return Clock.monotonic() - begin
        }
        let before = loop.metrics
        let fanInLoop = try awaitDetached(Self.name) {
            await Self.fanIn(HopTarget(loop: loop), tasks: 16, callsEach: perTask)
        }
        let after = loop.metrics
        let jobsPerPass =
            Double(after.handled.jobsRun - before.handled.jobsRun) / Double(max(after.passes - before.passes, 1))
        let fanInDefault = try awaitDetached(Self.name) {
            await Self.fanIn(DefaultHopTarget(), tasks: 16, callsEach: perTask)
        }

        func ns(_ elapsed: Int64) -> Double { Double(elapsed) / Double(calls) }
        func fanInRate(_ elapsed: Int64) -> Double { Double(16 * perTask) / Double(elapsed) * 1e9 }
        return [
            Metric("preferred", unit: "ns/rt", key: "preferred_ns", value: ns(preferred), decimals: 0),
            Metric("thread_run", unit: "ns/rt", key: "thread_run_ns", value: ns(threadRun), decimals: 0),
            Metric(
                "preferred/thread_run", unit: "x", key: "preferred_vs_thread_run",
                value: Double(preferred) / Double(threadRun), decimals: 2),
            Metric("loop_actor", unit: "ns/rt", key: "loop_actor_ns", value: ns(loopActor), decimals: 0),
            Metric("global", unit: "ns/call", key: "global_ns", value: ns(global), decimals: 0),
            Metric(
                "fanin_loop_actor", unit: "calls/s", key: "fanin_loop_actor_calls_s", value: fanInRate(fanInLoop),
                decimals: 0),
            Metric(
                "fanin_default_actor", unit: "calls/s", key: "fanin_default_actor_calls_s",
                value: fanInRate(fanInDefault), decimals: 0),
            Metric("fanin_jobs_per_pass", unit: "jobs", key: "fanin_jobs_per_pass", value: jobsPerPass, decimals: 1),
            Metric(
                "fanin_loop_busy", unit: "%", key: "fanin_loop_busy_pct", value: after.utilization(since: before) * 100,
                decimals: 0),
        ]
    }

    func tearDown() {
        thread?.stop()
    }

    /// `tasks` child tasks each call `target.work` `callsEach` times; answers the elapsed nanoseconds.
    private static func fanIn(_ target: some HopWork, tasks: Int, callsEach: Int) async -> Int64 {
        let begin = Clock.monotonic()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    for index in 0..<callsEach { _ = await target.work(index) }
                }
            }
        }
        return Clock.monotonic() - begin
    }

}

/// The measured function: a little arithmetic the optimiser cannot drop.
@concurrent
@inline(never)
private func work(_ value: Int) async -> Int {
    workSynchronously(value)
}

@inline(never)
private func workSynchronously(_ value: Int) -> Int {
    value &* 31 &+ 7
}

/// An actor the fan-in calls, whichever its executor.
private protocol HopWork: Actor {
    func work(_ value: Int) -> Int
}

/// The function as an actor method, the actor isolated to a loop's thread.
private actor HopTarget: HopWork {
    let loop: Loop
    private var total = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop) { self.loop = loop }

    func work(_ value: Int) -> Int {
        total &+= workSynchronously(value)
        return total
    }
}

/// The same actor on the default executor.
private actor DefaultHopTarget: HopWork {
    private var total = 0

    func work(_ value: Int) -> Int {
        total &+= workSynchronously(value)
        return total
    }
}
