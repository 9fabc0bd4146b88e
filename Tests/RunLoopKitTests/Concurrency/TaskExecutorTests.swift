import Glibc
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Where a nonisolated async function runs: the thread, and whether that thread's loop is `loop`.
@concurrent
private func whereDoesThisRun(expecting loop: Loop) async -> (onLoop: Bool, threadID: pid_t) {
    await Task.yield()  // A suspension: the job that resumes it must run on the preferred executor too.
    return (loop.isCurrent, ThreadIdentity.currentThreadID())
}

/// A loop (and a loop executor for other modes) as a task executor: nonisolated async code of a task that prefers it
/// runs on the loop's thread, in the modes of the executor.
@Suite struct TaskExecutorTests {
    @Test func nonisolatedCodeRunsOnThePreferredLoop() async throws {
        let worker = try LoopThread(name: "task-home")
        defer { worker.stop() }
        let place = await withTaskExecutorPreference(worker.loop.taskExecutor) {
            await whereDoesThisRun(expecting: worker.loop)
        }
        #expect(place.onLoop)
        #expect(place.threadID == worker.threadID)
        // Without the preference the same function runs on the global executor, off the loop.
        #expect(await !whereDoesThisRun(expecting: worker.loop).onLoop)
    }

    /// A `LoopThread` keeps one task executor: the same object every time, on its loop.
    @Test func aLoopThreadKeepsOneTaskExecutor() async throws {
        let worker = try LoopThread(name: "task-thread")
        defer { worker.stop() }
        #expect(worker.taskExecutor === worker.taskExecutor)
        #expect(worker.taskExecutor.loop === worker.loop)
        let onWorker = await withTaskExecutorPreference(worker.taskExecutor) {
            await whereDoesThisRun(expecting: worker.loop).onLoop
        }
        #expect(onWorker)
    }

    @Test func anUnstructuredTaskWithAPreferenceRunsOnTheLoop() async throws {
        let worker = try LoopThread(name: "task-unstructured")
        defer { worker.stop() }
        let loop = worker.loop
        let task = Task(executorPreference: loop.taskExecutor) {
            let first = loop.isCurrent
            await Task.yield()
            let second = await whereDoesThisRun(expecting: loop).onLoop
            return first && second && loop.isCurrent
        }
        #expect(await task.value)
    }

    @Test func childTasksOfAGroupInheritThePreference() async throws {
        let worker = try LoopThread(name: "task-group")
        defer { worker.stop() }
        let loop = worker.loop
        let results = await withTaskExecutorPreference(loop.taskExecutor) {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { await whereDoesThisRun(expecting: loop).onLoop } }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0 })
    }

    /// A loop executor for a mode that is not common: the task's code runs only while the loop runs that mode.
    @Test func aLoopExecutorRunsTheTaskInItsModesOnly() async throws {
        let worker = try LoopThread(name: "task-modes")
        defer { worker.stop() }
        let loop = worker.loop
        let executor = try loop.executor(in: ["tracking"])
        let ran = Atomic<Bool>(false)
        let modeSeen = Mutex<Loop.Mode?>(nil)
        let task = Task(executorPreference: executor.taskExecutor) {
            modeSeen.withLock { $0 = loop.currentMode }
            ran.store(true, ordering: .relaxed)
        }
        // The worker runs its default mode: the job waits for a pass of "tracking".
        #expect(!(await awaitCondition(timeout: .milliseconds(200)) { ran.load(ordering: .relaxed) }))
        // A timer runs the mode nested (not a block: blocks queued before a block, the job among them, wait for
        // that block's batch to end, as in CF).
        let nested = try LoopTimer(after: .zero) { _ in
            let keepAlive = try! LoopTimer(after: .seconds(3_600)) { _ in }
            try! loop.add(keepAlive, to: "tracking")
            loop.run(in: "tracking", for: .milliseconds(100))
            keepAlive.invalidate()
        }
        try loop.add(nested)
        // Waited for with a deadline: a job that never runs must fail the test, not hang it.
        #expect(await awaitCondition { ran.load(ordering: .relaxed) })
        guard ran.load(ordering: .relaxed) else { return }
        await task.value
        #expect(modeSeen.withLock { $0 } == "tracking")
    }

    /// A task that prefers the loop calls an actor whose executor is the same loop: the call goes in without a hop
    /// (the job knows the loop is its serial executor too), and the way back to the nonisolated code is a job queued
    /// from the loop's own thread, which wakes nothing: the whole exchange stays on the loop's thread.
    @Test func callingAnActorOnTheSameLoopStaysOnItsThread() async throws {
        let worker = try LoopThread(name: "task-actor")
        defer { worker.stop() }
        let loop = worker.loop
        let actor = LoopBoundRecorder(loop: loop)
        let (wakeUps, allOnLoop) = await Task(executorPreference: loop.taskExecutor) {
            let before = loop.wakeUpWrites
            var allOnLoop = true
            for index in 0..<1_000 {
                await actor.record("\(index)")
                allOnLoop = allOnLoop && loop.isCurrent
            }
            return (loop.wakeUpWrites - before, allOnLoop)
        }.value
        #expect(allOnLoop)
        #expect(wakeUps == 0)
        #expect(await actor.callsOffTheLoopThread == 0)
        #expect(await actor.calls == 1_000)
    }
}
