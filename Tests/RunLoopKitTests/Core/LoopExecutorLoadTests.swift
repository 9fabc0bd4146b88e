import Glibc
import Synchronization
import Testing

@testable import RunLoopKit

/// Loop executors under load: the cost of an enqueue to an awake loop, and many tasks on one actor.
@Suite struct LoopExecutorLoadTests {
    @Test func jobsEnqueuedToAnAwakeLoopWriteNoEventFD() async throws {
        let worker = try LoopThread(name: "awake")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop)
        let busy = BusyBlock()
        #expect(busy.occupy(worker.loop))
        let writesBefore = worker.loop.wakeUpWrites
        let tasks = (0..<2_000).map { _ in Task.immediateDetached { _ = await actor.increment() } }
        let writesWhileAwake = worker.loop.wakeUpWrites - writesBefore
        busy.release.set()
        for task in tasks { await task.value }
        #expect(writesWhileAwake == 0)
        #expect(await actor.calls == 2_000)
    }

    @Test func manyTasksHammeringOneActorCompleteExactlyOnce() async throws {
        let worker = try LoopThread(name: "hammer")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop)
        let callsPerTask = 10_000
        let answers = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var seen: [Int] = []
                    seen.reserveCapacity(callsPerTask)
                    for _ in 0..<callsPerTask { seen.append(await actor.increment()) }
                    return seen
                }
            }
            return await group.reduce(into: []) { $0.append(contentsOf: $1) }
        }
        #expect(answers.count == 4 * callsPerTask)
        #expect(Set(answers).count == 4 * callsPerTask)  // Every call ran once, each saw a distinct count.
        #expect(answers.max() == 4 * callsPerTask)
        #expect(await actor.calls == 4 * callsPerTask)
        #expect(await actor.callsOffTheLoopThread == 0)
    }

    @Test func manyTasksOnAChosenModeSetCompleteExactlyOnce() async throws {
        let worker = try LoopThread(name: "hammer-modes")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop, executor: try worker.loop.executor(in: [.default, "other"]))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<2_000 { _ = await actor.increment() } }
            }
        }
        #expect(await actor.calls == 8_000)
        #expect(await actor.callsOffTheLoopThread == 0)
    }
}
