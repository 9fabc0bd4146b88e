import Dispatch
import RunLoopKit

/// Dispatch's main queue, the main actor and an actor on a worker's loop, all meeting RunLoopKit: the main thread
/// runs `Loop.main`, which serves `DispatchQueue.main` (and so `@MainActor` code), while an actor lives on a
/// `LoopThread`; then nonisolated code runs on the worker through a task executor preference, and a task sleeps on
/// the worker loop's clock. Each line says which thread its code ran on.
enum ConcurrencyScenario {
    static func run() {
        let worker: LoopThread
        do {
            worker = try LoopThread(name: "demo-actor")
        } catch {
            Trace.line("main", "cannot start the worker: \(error)")
            return
        }
        let tally = Tally(thread: worker)
        let here: @Sendable () -> String = { threadLabel(worker: worker) }

        DispatchQueue.global().async {
            DispatchQueue.main.async {
                Trace.line(here(), "DispatchQueue.main.async work, queued from a Dispatch worker")
            }
        }
        Task.detached {
            Trace.line(here(), "a detached task starts")
            let answer = await MainActorReport.answer(here)
            Trace.line(here(), "back in the task: the main actor answered \(answer)")
            for _ in 1...3 { _ = await tally.add(here) }
            let total = (try? await worker.run { tally.unsafeWorkerCount }) ?? -1
            Trace.line(here(), "thread.run { } read the count on the worker's thread: \(total)")
            // A task executor preference: nonisolated code of this closure runs on the worker's thread.
            let summary = await withTaskExecutorPreference(worker.loop.taskExecutor) {
                await summarize(tally: total, here)
            }
            Trace.line(here(), "back from the preference: \(summary)")
            // A sleep on the worker's loop clock: the wake-up is one of that loop's timer events.
            let clock = worker.loop.clock
            let slept =
                (try? await clock.measure { try await Task.sleep(for: .milliseconds(15), clock: clock) }) ?? .zero
            Trace.line(here(), "Task.sleep(for: 15 ms, clock: worker.loop.clock) took \(slept)")
            Loop.main.stop()
        }
        let result = Loop.main.run(in: .default, for: .seconds(10))
        worker.stop()
        Trace.line("main", "Loop.main.run returned \(result); the worker stopped")
    }

    /// Names the calling thread: the main loop's, the worker's, or one of Swift's cooperative pool.
    static func threadLabel(worker: LoopThread) -> String {
        if Loop.main.isCurrent { return "main" }
        if worker.loop.isCurrent { return "worker" }
        return "pool"
    }
}

/// Nonisolated async code: where it runs depends on the task's executor preference.
@concurrent
private func summarize(tally: Int, _ here: @Sendable () -> String) async -> String {
    Trace.line(here(), "nonisolated async function under withTaskExecutorPreference(worker.loop.taskExecutor)")
    return "\(tally) calls counted"
}

/// Main-actor code, which Swift on Linux runs through Dispatch's main queue: here, inside `Loop.main`'s passes.
@MainActor
private enum MainActorReport {
    static func answer(_ here: @Sendable () -> String) -> Int {
        Trace.line(here(), "@MainActor function: on the main loop, in mode \(Loop.main.currentMode?.name ?? "none")")
        return 42
    }
}

/// An actor whose executor is a LoopThread's loop: its methods run on that thread, between the loop's other work.
private actor Tally {
    let thread: LoopThread
    private var count = 0

    init(thread: LoopThread) { self.thread = thread }

    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.loop.asUnownedSerialExecutor() }

    func add(_ here: @Sendable () -> String) -> Int {
        count += 1
        Trace.line(here(), "actor method on the LoopThread: count is now \(count)")
        return count
    }

    /// The count, read from a block on the worker's own thread (the actor's thread) without a hop.
    nonisolated var unsafeWorkerCount: Int { assumeIsolated { $0.count } }
}
