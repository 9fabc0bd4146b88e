import Glibc
import RunLoopKit

/// A, actor hop: an actor method awaited N = 100,000 times, one call after another, in five variants.
///
/// - `loop_actor`: a task on the global executor calls an actor whose executor is a ``LoopThread``'s loop (each
///   call: one job enqueued on the loop, one resumption back on the global executor).
/// - `perform`: the same round trip by hand, the baseline: the task suspends on a continuation and
///   `Loop.perform` runs the method's body on the loop, then resumes the continuation.
/// - `default_actor`: the same actor on the runtime's default executor (no loop at all).
/// - `loop_to_loop`: an actor on loop A calls an actor on loop B (W1's shape with actors: every hop is a job on a
///   loop).
/// - `w1_perform`: W1's ping-pong between the same two loops with `Loop.perform`, the baseline of `loop_to_loop`.
///
/// Ratios: `loop_actor_vs_perform` and `loop_to_loop_vs_w1`, ns per round trip over the baseline's (target 1.2).
///
/// `LOOP_BENCH_A_ONLY=<variant>` runs one variant only and reports its figures alone: run under valgrind with two
/// sizes (`--quick` and not), the difference in allocations over the extra calls is that variant's heap
/// allocations per round trip (scripts/check/alloc-check.sh does the same for passes).
final class ActorHopBenchmark: Benchmark {
    static let name = "actor-hop"
    static let id = "A"
    static let title = "an actor on a loop vs Loop.perform and the default executor"

    private let calls: Int
    private var threadA: LoopThread?
    private var threadB: LoopThread?

    init(scale: Int) {
        calls = 100_000 / scale
    }

    func setUp() throws {
        threadA = try LoopThread(name: "bench-actor-a")
        threadB = try LoopThread(name: "bench-actor-b")
    }

    func run() throws -> [Metric] {
        let loopA = threadA!.loop
        let loopB = threadB!.loop
        let calls = self.calls
        let warmUp = max(calls / 10, 100)

        let only = getenv("LOOP_BENCH_A_ONLY").map { String(cString: $0) }
        if let only { return try Self.runOnly(only, calls: calls, warmUp: warmUp, loopA: loopA, loopB: loopB) }

        let loopActor = try Self.timeLoopActor(calls: calls, warmUp: warmUp, loop: loopB)
        let perform = try awaitDetached(Self.name) { () async -> Int64 in
            let counter = ConfinedCounter()
            for _ in 0..<warmUp { _ = await counter.bump(on: loopB) }
            let begin = Clock.monotonic()
            for _ in 0..<calls { _ = await counter.bump(on: loopB) }
            return Clock.monotonic() - begin
        }
        let defaultActor = try awaitDetached(Self.name) { () async -> Int64 in
            let counter = DefaultCounter()
            for _ in 0..<warmUp { _ = await counter.bump() }
            let begin = Clock.monotonic()
            for _ in 0..<calls { _ = await counter.bump() }
            return Clock.monotonic() - begin
        }
        let loopToLoop = try Self.timeLoopToLoop(calls: calls, warmUp: warmUp, loopA: loopA, loopB: loopB)
        let w1 = try Self.timeW1(calls: calls, warmUp: warmUp, loopA: loopA, loopB: loopB)

        let n = Double(calls)
        func ns(_ elapsed: Int64) -> Double { Double(elapsed) / n }
        func rate(_ elapsed: Int64) -> Double { n / Double(elapsed) * 1e9 }
        return [
            Metric("loop_actor", unit: "rt/s", key: "loop_actor_rt_s", value: rate(loopActor), decimals: 0),
            Metric("loop_actor", unit: "ns/rt", key: "loop_actor_ns", value: ns(loopActor), decimals: 0),
            Metric("perform", unit: "rt/s", key: "perform_rt_s", value: rate(perform), decimals: 0),
            Metric("perform", unit: "ns/rt", key: "perform_ns", value: ns(perform), decimals: 0),
            Metric(
                "loop_actor/perform", unit: "x", key: "loop_actor_vs_perform",
                value: Double(loopActor) / Double(perform), decimals: 2),
            Metric("default_actor", unit: "rt/s", key: "default_actor_rt_s", value: rate(defaultActor), decimals: 0),
            Metric("default_actor", unit: "ns/rt", key: "default_actor_ns", value: ns(defaultActor), decimals: 0),
            Metric("loop_to_loop", unit: "rt/s", key: "loop_to_loop_rt_s", value: rate(loopToLoop), decimals: 0),
            Metric("loop_to_loop", unit: "ns/rt", key: "loop_to_loop_ns", value: ns(loopToLoop), decimals: 0),
            Metric("w1_perform", unit: "ns/rt", key: "w1_perform_ns", value: ns(w1), decimals: 0),
            Metric(
                "loop_to_loop/w1", unit: "x", key: "loop_to_loop_vs_w1",
                value: Double(loopToLoop) / Double(w1), decimals: 2),
        ]
    }

    func tearDown() {
        threadA?.stop()
        threadB?.stop()
    }

    /// Runs one variant (see `LOOP_BENCH_A_ONLY`) and answers its ns per round trip.
    private static func runOnly(_ name: String, calls: Int, warmUp: Int, loopA: Loop, loopB: Loop) throws -> [Metric] {
        let elapsed: Int64
        switch name {
        case "loop_actor": elapsed = try timeLoopActor(calls: calls, warmUp: warmUp, loop: loopB)
        case "loop_to_loop": elapsed = try timeLoopToLoop(calls: calls, warmUp: warmUp, loopA: loopA, loopB: loopB)
        case "w1_perform": elapsed = try timeW1(calls: calls, warmUp: warmUp, loopA: loopA, loopB: loopB)
        default:
            throw BenchmarkFailure(
                "actor-hop: LOOP_BENCH_A_ONLY must be loop_actor, loop_to_loop or w1_perform, not \(name)")
        }
        return [Metric(name, unit: "ns/rt", key: "\(name)_ns", value: Double(elapsed) / Double(calls), decimals: 0)]
    }

    /// `loop_actor`: a task calls an actor on `loop`; answers the elapsed nanoseconds of `calls` calls.
    private static func timeLoopActor(calls: Int, warmUp: Int, loop: Loop) throws -> Int64 {
        try awaitDetached(id) {
            let counter = LoopCounter(loop: loop)
            for _ in 0..<warmUp { _ = await counter.bump() }
            let begin = Clock.monotonic()
            for _ in 0..<calls { _ = await counter.bump() }
            return Clock.monotonic() - begin
        }
    }

    /// `loop_to_loop`: an actor on `loopA` calls an actor on `loopB`; answers the elapsed nanoseconds.
    private static func timeLoopToLoop(calls: Int, warmUp: Int, loopA: Loop, loopB: Loop) throws -> Int64 {
        try awaitDetached(id) {
            let caller = LoopCaller(loop: loopA, callee: LoopCounter(loop: loopB))
            _ = await caller.call(times: warmUp)
            return await caller.call(times: calls)
        }
    }

    /// `w1_perform`: W1's perform ping-pong between `loopA` and `loopB`; answers the elapsed nanoseconds.
    private static func timeW1(calls: Int, warmUp: Int, loopA: Loop, loopB: Loop) throws -> Int64 {
        _ = try Rally.play(a: loopA, b: loopB, roundTrips: warmUp, label: Self.name)
        return try Rally.play(a: loopA, b: loopB, roundTrips: calls, label: Self.name)
    }

}

/// The measured actor, isolated to a loop's thread.
private actor LoopCounter {
    let loop: Loop
    private var count = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop) { self.loop = loop }

    func bump() -> Int {
        count += 1
        return count
    }
}

/// The same actor on the runtime's default executor.
private actor DefaultCounter {
    private var count = 0

    func bump() -> Int {
        count += 1
        return count
    }
}

/// The perform baseline's state: touched only inside blocks on one loop's thread, one at a time.
private final class ConfinedCounter: @unchecked Sendable {
    private var count = 0

    /// Runs the increment on `loop` with `Loop.perform` and resumes with its result.
    func bump(on loop: Loop) async -> Int {
        await withUnsafeContinuation { continuation in
            loop.perform { [self] in
                count += 1
                continuation.resume(returning: count)
            }
        }
    }
}

/// An actor on loop A calling an actor on loop B, one call after another.
private actor LoopCaller {
    let loop: Loop
    let callee: LoopCounter
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop, callee: LoopCounter) {
        self.loop = loop
        self.callee = callee
    }

    /// Calls the callee `times` times; answers the elapsed nanoseconds.
    func call(times: Int) async -> Int64 {
        let begin = Clock.monotonic()
        for _ in 0..<times { _ = await callee.bump() }
        return Clock.monotonic() - begin
    }
}
