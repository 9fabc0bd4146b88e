import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// `setNextFireTime` on a timer whose loop's thread exited, or is exiting while the call runs: the call answers
/// whether the loop took the change, and the new time is never lost (the timer keeps it for another loop).
@Suite struct TimerRearmAtThreadExitTests {
    /// A waiting timer whose loop's thread has exited: the move answers `false`, the timer keeps the time, stays
    /// valid, and fires when another loop takes it.
    @Test func aMoveAfterTheThreadExitedAnswersFalseAndKeepsTheTime() throws {
        let fired = Atomic<Int>(0)
        let timer = try LoopTimer(after: .seconds(3600)) { _ in fired.add(1, ordering: .relaxed) }
        let first = TestThread { try! Loop.current.add(timer) }
        first.join()
        let target = Loop.Instant.now - .milliseconds(1)
        #expect(timer.setNextFireTime(target) == false)
        #expect(timer.nextFireTime == target)
        #expect(timer.isValid)
        let second = TestThread {
            try! Loop.current.add(timer)
            _ = Loop.current.run(in: .default, for: .seconds(10))
        }
        second.join()
        #expect(fired.load(ordering: .relaxed) == 1)
    }

    /// An invalidated timer ignores the call and says so; a timer in no loop keeps the time for its first add.
    @Test func anInvalidatedTimerAnswersFalseAndATimerInNoLoopTrue() throws {
        let timer = try LoopTimer(after: .seconds(3600)) { _ in }
        let target = Loop.Instant.now + .seconds(5)
        #expect(timer.setNextFireTime(target))
        #expect(timer.nextFireTime == target)
        timer.invalidate()
        #expect(timer.setNextFireTime(.now) == false)
    }

    /// Spent one-shot timers re-armed from another thread while their loop's thread exits: whatever each call
    /// answers, every timer ends valid with the new time (a re-arm that lost the race to the teardown used to be
    /// dropped, its time with it), and one the loop took was taken before the inbox closed.
    @Test func reArmsRacingTheThreadExitNeverLoseTheirTime() throws {
        let rounds = 1000
        let timersPerRound = 64
        var lost = 0
        var refused = 0
        for _ in 0..<rounds {
            let timers = try (0..<timersPerRound).map { _ in try LoopTimer(after: .zero) { _ in } }
            let spent = Atomic<Bool>(false)
            let go = Atomic<Bool>(false)
            let thread = TestThread {
                let loop = Loop.current
                for timer in timers { try! loop.add(timer) }
                _ = loop.run(in: .default, for: .seconds(10))  // Finished: every one-shot timer fired and left.
                spent.store(true, ordering: .sequentiallyConsistent)
                while !go.load(ordering: .sequentiallyConsistent) {}  // Exits as the re-arms start.
            }
            #expect(waitUntil { spent.load(ordering: .sequentiallyConsistent) })
            let target = Loop.Instant.now + .seconds(3600)
            go.store(true, ordering: .sequentiallyConsistent)
            for timer in timers where !timer.setNextFireTime(target) { refused += 1 }
            thread.join()
            lost += timers.count { $0.nextFireTime != target || !$0.isValid }
        }
        #expect(lost == 0, "re-arms whose time was lost, of \(rounds * timersPerRound)")
        TestFigures.report("re-arms racing the thread exit: \(rounds * timersPerRound), \(refused) answered false")
    }
}
