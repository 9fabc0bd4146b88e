import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

@Suite("Async run on a loop or a LoopThread", .timeLimit(.minutes(2)))
struct AsyncRunTests {
    @Test func loopRunReturnsTheValueComputedOnTheLoopsThread() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let (value, onLoop) = try await worker.loop.run { (6 * 7, worker.loop.isCurrent) }
        #expect(value == 42)
        #expect(onLoop)
    }

    @Test func loopRunRethrowsTheWorksError() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let result = await Result(catching: { try await worker.loop.run { throw AsyncSupport.WorkError(value: 7) } })
        #expect(throws: AsyncSupport.WorkError(value: 7)) { try result.get() }
    }

    @Test func loopRunInAListOfModesRunsInANestedRunOfAnyOfThem() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        // The worker is busy in a nested "tracking" run until the block (queued for tracking) runs.
        let ran = ItemsSupport.Flag()
        let entered = ItemsSupport.Flag()
        worker.perform {
            let loop = Loop.current
            try! loop.add(ItemsSupport.keepAlive(), to: "tracking")
            entered.set()
            ItemsSupport.run(loop, in: "tracking", timeout: .seconds(20)) { ran.isSet }
        }
        #expect(await AsyncSupport.eventually { entered.isSet })
        let mode = try await worker.loop.run(in: [.default, "tracking"]) { () -> Loop.Mode? in
            ran.set()
            return Loop.current.currentMode
        }
        #expect(mode == "tracking")
    }

    @Test func loopRunRefusesAnEmptyModeList() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let result = await Result(catching: { try await worker.loop.run(in: []) { 1 } })
        #expect(loopErrorCode(result) == .invalidArgument)
    }

    @Test func loopRunOnADeadLoopThrowsLoopTerminated() async {
        let loop = AsyncSupport.deadLoop()
        let ran = ItemsSupport.Flag()
        let result = await Result(catching: { try await loop.run { ran.set() } })
        #expect(loopErrorCode(result) == .loopTerminated)
        #expect(!ran.isSet)
    }

    @Test func aBlockDroppedWhenTheLoopsThreadExitsThrowsLoopTerminated() async throws {
        // The thread never runs "elsewhere": the block waits until the thread exits and drops it.
        let exit = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { _ in _ = waitUntil { exit.isSet } }
        let ran = ItemsSupport.Flag()
        let task = Task { try await loop.run(in: "elsewhere") { ran.set() } }
        #expect(await AsyncSupport.eventually { !loop.inbox.isEmpty })
        exit.set()
        thread.join()
        let result = await AsyncSupport.result(of: task)
        #expect(loopErrorCode(result) == .loopTerminated)
        #expect(!ran.isSet)
    }

    @Test func loopRunCancelledBeforeTheCallQueuesNothing() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let ran = ItemsSupport.Flag()
        let result = await Task {
            AsyncSupport.cancelCurrentTask()
            return try await worker.loop.run(in: "elsewhere") { ran.set() }
        }.result
        #expect(isCancellation(result))
        #expect(AsyncSupport.pendingBlockCount(of: worker) == 0)
        #expect(!ran.isSet)
    }

    @Test func loopRunCancelledWhileQueuedResumesAtOnceAndNeverRunsTheWork() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let ran = ItemsSupport.Flag()
        let task = Task { try await worker.loop.run(in: "elsewhere") { ran.set() } }
        #expect(await AsyncSupport.eventually { AsyncSupport.pendingBlockCount(of: worker) == 1 })
        task.cancel()
        #expect(isCancellation(await AsyncSupport.result(of: task)))
        // Now run the mode: the block comes up, finds its wait cancelled and skips the work.
        AsyncSupport.runOnce("elsewhere", on: worker)
        #expect(AsyncSupport.pendingBlockCount(of: worker) == 0)
        #expect(!ran.isSet)
    }

    @Test func loopRunCancelledWhileTheWorkRunsWaitsForItsResult() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let started = ItemsSupport.Flag()
        let release = ItemsSupport.Flag()
        let task = Task {
            try await worker.loop.run { () -> Int in
                started.set()
                _ = waitUntil { release.isSet }
                return 5
            }
        }
        #expect(await AsyncSupport.eventually { started.isSet })
        task.cancel()
        release.set()
        let result = await AsyncSupport.result(of: task)
        #expect((try? result?.get()) == 5)
    }

    @Test func threadRunReturnsTheValueComputedOnTheWorker() async throws {
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let onWorker = try await worker.run { worker.loop.isCurrent }
        #expect(onWorker)
        let result = await Result(catching: { try await worker.run { throw AsyncSupport.WorkError(value: 3) } })
        #expect(throws: AsyncSupport.WorkError(value: 3)) { try result.get() }
    }

    @Test func threadRunAfterStopThrowsThreadStopped() async throws {
        let worker = try LoopThread(name: "async-run")
        worker.stop()
        let ran = ItemsSupport.Flag()
        let result = await Result(catching: { try await worker.run { ran.set() } })
        #expect(loopErrorCode(result) == .threadStopped)
        #expect(!ran.isSet)
        let empty = await Result(catching: { try await worker.run(in: []) { 1 } })
        #expect(loopErrorCode(empty) == .threadStopped || loopErrorCode(empty) == .invalidArgument)
    }

    @Test func threadRunAcceptedBeforeStopStillRuns() async throws {
        let worker = try LoopThread(name: "async-run")
        // Queued for a mode the worker never runs: only the drain at stop runs it.
        let task = Task { try await worker.run(in: "elsewhere") { 11 } }
        #expect(await AsyncSupport.eventually { AsyncSupport.pendingBlockCount(of: worker) == 1 })
        worker.stop()
        #expect((try? await AsyncSupport.result(of: task)?.get()) == 11)
    }

    @Test func threadRunCancelledBeforeTheCallThrowsCancellation() async throws {
        let worker = try LoopThread(name: "async-run")
        worker.stop()  // A stopped worker would throw threadStopped: cancellation is checked first.
        let result = await Task {
            AsyncSupport.cancelCurrentTask()
            return try await worker.run { 1 }
        }.result
        #expect(isCancellation(result))
    }

    @Test func syncPerformStillResolvesInAsyncContexts() async throws {
        // `perform { }` keeps meaning the synchronous Loop.perform / LoopThread.perform inside async functions.
        let worker = try LoopThread(name: "async-run")
        defer { worker.stop() }
        let performed = Counter()
        let queued: Bool = worker.loop.perform { performed.increment() }
        worker.perform { performed.increment() }
        #expect(queued)
        #expect(await AsyncSupport.eventually { performed.current == 2 })
    }
}
