import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// A loop's timers as a `Clock`: `Task.sleep(for:clock:)`, `measure`, generic code over `some Clock`, tolerance,
/// modes and cancellation.
@Suite struct LoopClockTests {
    @Test func taskSleepOnTheLoopClockEndsAfterItsDurationInAPassOfTheLoop() async throws {
        let worker = try LoopThread(name: "clock")
        defer { worker.stop() }
        let clock = worker.loop.clock
        let firedOnLoop = Atomic<Bool>(false)
        let observer = LoopObserver(activities: .afterWaiting, repeats: true) { _, _ in
            firedOnLoop.store(true, ordering: .relaxed)
        }
        try worker.loop.add(observer)
        defer { observer.invalidate() }
        let start = clock.now
        try await Task.sleep(for: .milliseconds(30), clock: clock)
        let elapsed = start.duration(to: clock.now)
        #expect(elapsed >= .milliseconds(30))
        #expect(elapsed < .seconds(300))  // Only "it ended": a suite that starves the machine delays it.
        let loopWoke = firedOnLoop.load(ordering: .relaxed)
        #expect(loopWoke, "the loop never woke up: its timer did not end the sleep")
        #expect(worker.loop.itemCounts(in: .default).timers == 0, "the sleep's timer stays in the loop")
    }

    /// Generic code that takes `some Clock` works with the loop's clock as with the standard ones.
    @Test func genericClockCodeRunsOnTheLoopClock() async throws {
        func pause<C: Clock>(_ clock: C, for duration: C.Duration) async throws -> C.Duration {
            try await clock.measure { try await clock.sleep(for: duration) }
        }
        let worker = try LoopThread(name: "clock-generic")
        defer { worker.stop() }
        let measured = try await pause(worker.loop.clock, for: .milliseconds(20))
        #expect(measured >= .milliseconds(20))
        #expect(measured < .seconds(300))
    }

    @Test func instantsFollowTheInstantProtocol() {
        let start = Loop.Instant(nanoseconds: 1_000)
        let later = start.advanced(by: .microseconds(5))
        #expect(later.nanoseconds == 6_000)
        #expect(start.duration(to: later) == .microseconds(5))
        #expect(later - .microseconds(5) == start)  // InstantProtocol's operator.
        var moved = start
        moved += .nanoseconds(10)
        #expect(moved.nanoseconds == 1_010)
        #expect(Loop.Instant.distantFuture.advanced(by: .seconds(1)) == .distantFuture)  // Saturates.
    }

    /// A sleep on a clock for a mode the loop does not run waits until it runs that mode.
    @Test func aSleepInAModeEndsOnlyWhenTheLoopRunsThatMode() async throws {
        let worker = try LoopThread(name: "clock-modes")
        defer { worker.stop() }
        let loop = worker.loop
        let woke = Atomic<Bool>(false)
        let sleeper = Task {
            try await Task.sleep(for: .milliseconds(1), clock: loop.clock(in: "tracking"))
            woke.store(true, ordering: .relaxed)
        }
        #expect(!(await awaitCondition(timeout: .milliseconds(200)) { woke.load(ordering: .relaxed) }))
        // The sleeper's timer is in "tracking" (a suite that keeps the sleeper's task waiting only delays this).
        #expect(await awaitCondition(timeout: .seconds(60)) { loop.itemCounts(in: "tracking").timers == 1 })
        let nested = try LoopTimer(after: .zero) { _ in loop.run(in: "tracking", for: .milliseconds(200)) }
        try loop.add(nested)
        #expect(await awaitCondition { woke.load(ordering: .relaxed) })
        sleeper.cancel()
    }

    /// Cancelling a sleeping task ends its sleep at once and removes its timer from the loop.
    @Test func cancellingASleepRemovesItsTimerAtOnce() async throws {
        let worker = try LoopThread(name: "clock-cancel")
        defer { worker.stop() }
        let loop = worker.loop
        let sleeper = Task { try await Task.sleep(for: .seconds(3_600), clock: loop.clock) }
        #expect(await awaitCondition(timeout: .seconds(60)) { loop.itemCounts(in: .default).timers == 1 })
        let start = ContinuousClock.now
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(ContinuousClock.now - start < .seconds(300))
        #expect(await awaitCondition { loop.itemCounts(in: .default).timers == 0 })
    }

    /// A tolerance lets the loop fire the sleep's timer together with another timer due a little later (one
    /// wake-up for both), as it does for a `LoopTimer` with that tolerance; without one, each has its own wake-up.
    /// The loop records the instant of each wake-up, so a test task the suite keeps waiting does not matter.
    @Test(arguments: [Duration.milliseconds(80), .zero])
    func aToleranceLetsTheSleepShareAWakeUp(tolerance: Duration) async throws {
        let worker = try LoopThread(name: "clock-tolerance")
        defer { worker.stop() }
        let loop = worker.loop
        let clock = loop.clock
        let wakeUps = Mutex<[Loop.Instant]>([])
        let observer = LoopObserver(activities: .afterWaiting, repeats: true) { _, _ in
            wakeUps.withLock { $0.append(.now) }
        }
        try loop.add(observer)
        defer { observer.invalidate() }
        let deadline = clock.now.advanced(by: .milliseconds(100))
        let otherFired = Mutex<Loop.Instant?>(nil)
        let other = try LoopTimer(at: deadline.advanced(by: .milliseconds(60))) { _ in
            otherFired.withLock { $0 = .now }
        }
        try loop.add(other)
        try await clock.sleep(until: deadline, tolerance: tolerance)
        #expect(clock.now >= deadline)
        #expect(await awaitCondition { otherFired.withLock { $0 } != nil })
        let otherAt = otherFired.withLock { $0 }!
        // The adds woke the loop long before the deadline; count the wake-ups from the deadline to the other timer.
        let count = wakeUps.withLock { $0.filter { $0 >= deadline && $0 <= otherAt }.count }
        #expect(count == (tolerance == .zero ? 2 : 1))
    }

    @Test func aNegativeToleranceIsATypedError() async throws {
        let worker = try LoopThread(name: "clock-bad-tolerance")
        defer { worker.stop() }
        await #expect(throws: LoopError.self) {
            try await worker.loop.clock.sleep(until: .now, tolerance: .milliseconds(-1))
        }
    }

    @Test func aSleepOnTheClockOfALoopWhoseThreadExitedThrows() async throws {
        let worker = try LoopThread(name: "clock-dead")
        let clock = worker.loop.clock
        worker.stop()
        #expect(await awaitCondition { worker.loop.isTerminated })
        await #expect(throws: LoopError.self) { try await Task.sleep(for: .milliseconds(1), clock: clock) }
    }
}
