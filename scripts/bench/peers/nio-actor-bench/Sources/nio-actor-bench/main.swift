// nio-actor-bench [--quick]: loop-bench's workload A (actor hop) on SwiftNIO, for scripts/bench/bench-actor.sh.
//
// An actor method awaited N = 100,000 times, one call after another, from a task on the global executor:
// - nio_actor: the actor's executor is a NIO event loop (`eventLoop.executor`, a `SelectableEventLoop`, which
//   queues the job without a closure);
// - nio_execute: the same round trip by hand: a continuation resumed by a closure run with `eventLoop.execute`;
// - nio_loop_to_loop: an actor on event loop A calls an actor on event loop B;
// - nio_submit: `try await loop.submit { }.get()`, a closure run on the event loop and its result awaited (the
//   analogue of loop-bench T's `thread_run`; NIO has no task executor, the analogue of T's `preferred`);
// - nio_fanin: 16 tasks call one actor on an event loop N/10 times each (loop-bench T's `fanin_loop_actor`).
// Prints one "A-nio <key> <value>" line per figure, like loop-bench's machine-readable lines.
import Glibc
import NIOCore
import NIOPosix

let quick = CommandLine.arguments.contains("--quick")
let calls = quick ? 10_000 : 100_000
let warmUp = calls / 10

actor Counter {
    let executor: any SerialExecutor
    private var count = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    init(executor: any SerialExecutor) { self.executor = executor }

    func bump() -> Int {
        count += 1
        return count
    }
}

actor Caller {
    let executor: any SerialExecutor
    let callee: Counter
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    init(executor: any SerialExecutor, callee: Counter) {
        self.executor = executor
        self.callee = callee
    }

    func call(times: Int) async -> UInt64 {
        let begin = DispatchTimeLike.now()
        for _ in 0..<times { _ = await callee.bump() }
        return DispatchTimeLike.now() - begin
    }
}

/// The loop's counter for the execute baseline: touched only inside closures on one event loop, one at a time.
final class ConfinedCounter: @unchecked Sendable {
    private var count = 0

    func bump(on loop: any EventLoop) async -> Int {
        await withUnsafeContinuation { continuation in
            loop.execute {
                self.count += 1
                continuation.resume(returning: self.count)
            }
        }
    }
}

/// Nanoseconds on CLOCK_MONOTONIC.
enum DispatchTimeLike {
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
let loops = Array(group.makeIterator())
let loopA = loops[0]
let loopB = loops[1]

let counter = Counter(executor: loopB.executor)
for _ in 0..<warmUp { _ = await counter.bump() }
var begin = DispatchTimeLike.now()
for _ in 0..<calls { _ = await counter.bump() }
let actorElapsed = DispatchTimeLike.now() - begin

let confined = ConfinedCounter()
for _ in 0..<warmUp { _ = await confined.bump(on: loopB) }
begin = DispatchTimeLike.now()
for _ in 0..<calls { _ = await confined.bump(on: loopB) }
let executeElapsed = DispatchTimeLike.now() - begin

let caller = Caller(executor: loopA.executor, callee: Counter(executor: loopB.executor))
_ = await caller.call(times: warmUp)
let loopToLoopElapsed = await caller.call(times: calls)

for _ in 0..<warmUp { _ = try await loopB.submit { 1 &* 31 &+ 7 }.get() }
begin = DispatchTimeLike.now()
for index in 0..<calls { _ = try await loopB.submit { index &* 31 &+ 7 }.get() }
let submitElapsed = DispatchTimeLike.now() - begin

let fanInTarget = Counter(executor: loopB.executor)
let perTask = calls / 10
begin = DispatchTimeLike.now()
await withTaskGroup(of: Void.self) { tasks in
    for _ in 0..<16 {
        tasks.addTask {
            for _ in 0..<perTask { _ = await fanInTarget.bump() }
        }
    }
}
let fanInElapsed = DispatchTimeLike.now() - begin

try await group.shutdownGracefully()

func ns(_ elapsed: UInt64) -> Int { Int(Double(elapsed) / Double(calls)) }
print("A-nio nio_actor_ns \(ns(actorElapsed))")
print("A-nio nio_execute_ns \(ns(executeElapsed))")
print("A-nio nio_loop_to_loop_ns \(ns(loopToLoopElapsed))")
print("A-nio nio_submit_ns \(ns(submitElapsed))")
print("A-nio nio_fanin_calls_s \(Int(Double(16 * perTask) / Double(fanInElapsed) * 1e9))")
