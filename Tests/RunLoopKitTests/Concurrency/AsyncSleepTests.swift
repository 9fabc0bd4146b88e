import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

@Suite("Async sleep on a loop's timer", .timeLimit(.minutes(2)))
struct AsyncSleepTests {
    @Test func sleepResumesAfterTheDurationAndLeavesNoTimer() async throws {
        let worker = try LoopThread(name: "async-sleep")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let start = Loop.Instant.now
        try await worker.loop.clock.sleep(for: .milliseconds(50))
        #expect(Loop.Instant.now - start >= .milliseconds(50))
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }

    @Test func sleepUntilAPastInstantResumesAtOnce() async throws {
        let worker = try LoopThread(name: "async-sleep")
        defer { worker.stop() }
        let start = Loop.Instant.now
        try await worker.loop.clock.sleep(until: start + .seconds(-1))
        // Generous: a suite under a sanitizer, with children running, kept this task waiting 8 s once.
        #expect(Loop.Instant.now - start < .seconds(60))
    }

    @Test func sleepInAModeThatDoesNotRunWaitsForIt() async throws {
        let worker = try LoopThread(name: "async-sleep")
        defer { worker.stop() }
        let woke = ItemsSupport.Flag()
        let task = Task {
            try await worker.loop.clock(in: "tracking").sleep(for: .zero)
            woke.set()
        }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).timers == 1 })
        #expect(!woke.isSet)
        // A nested run of "tracking" on the worker fires the timer.
        worker.perform { ItemsSupport.run(Loop.current, in: "tracking") { woke.isSet } }
        _ = try #require(await AsyncSupport.result(of: task)).get()
        #expect(woke.isSet)
    }

    @Test func sleepOnADeadLoopThrowsLoopTerminated() async {
        let loop = AsyncSupport.deadLoop()
        let result = await Result(catching: { try await loop.clock.sleep(for: .milliseconds(1)) })
        #expect(loopErrorCode(result) == .loopTerminated)
    }

    @Test func sleepThrowsLoopTerminatedWhenTheThreadStopsDuringIt() async throws {
        let worker = try LoopThread(name: "async-sleep")
        let task = Task { try await worker.loop.clock.sleep(for: .seconds(3600)) }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).timers == 1 })
        worker.stop()
        #expect(loopErrorCode(await AsyncSupport.result(of: task)) == .loopTerminated)
    }

    @Test func sleepRejectsANegativeTolerance() async throws {
        let worker = try LoopThread(name: "async-sleep")
        defer { worker.stop() }
        let result = await Result(catching: {
            try await worker.loop.clock.sleep(for: .seconds(1), tolerance: .seconds(-1))
        })
        #expect(loopErrorCode(result) == .invalidTolerance)
    }

    @Test func sleepCancelledBeforeTheCallThrowsWithoutTouchingTheLoop() async throws {
        let loop = AsyncSupport.deadLoop()  // A dead loop would answer loopTerminated: it is never asked.
        let result = await Task {
            AsyncSupport.cancelCurrentTask()
            try await loop.clock.sleep(for: .seconds(3600))
        }.result
        #expect(isCancellation(result))
    }

    @Test func sleepCancelledDuringItResumesAtOnceAndRemovesItsTimer() async throws {
        let worker = try LoopThread(name: "async-sleep")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let task = Task { try await worker.loop.clock.sleep(for: .seconds(3600)) }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).timers == before.timers + 1 })
        let cancelled = Loop.Instant.now
        task.cancel()
        #expect(isCancellation(await AsyncSupport.result(of: task)))
        #expect(Loop.Instant.now - cancelled < .seconds(60))  // Generous, as above.
        #expect(AsyncSupport.footprint(of: worker) == before)
    }
}
