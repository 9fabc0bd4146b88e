import Glibc
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// A one-shot timer that fired is spent, not dead: `setNextFireTime` re-arms it, from any thread, back into every mode
/// it was in; `invalidate()` is final; a move that reaches the loop after the firing it meant to move is void.
@Suite struct LoopTimerReArmTests {
    @Test func aFiredOneShotIsInvalidUntilReArmedThenFiresAgainAtTheNewTimeNeverEarly() {
        let fires = Recorder<LoopTimerTests.Fire>()
        let log = Recorder<String>()
        let rearmedFor = Box<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(5)) { timer in
                fires.append(LoopTimerTests.Fire(scheduled: timer.nextFireTime, actual: .now))
            }
            try! loop.add(timer)
            // A mode holding only a fired one-shot is empty: the run finishes, as in CF.
            log.append("\(loop.run(in: .default, for: .seconds(5))) \(timer.isValid) \(loop.contains(timer))")
            let next = Loop.Instant.now + .milliseconds(30)
            rearmedFor.value = next
            timer.setNextFireTime(next)
            log.append("re-armed \(timer.isValid) \(loop.contains(timer))")
            log.append("\(loop.run(in: .default, for: .seconds(5))) \(timer.isValid) \(loop.contains(timer))")
        }
        #expect(log.all == ["finished false false", "re-armed true true", "finished false false"])
        let all = fires.all
        #expect(all.count == 2)
        guard all.count == 2, let rearmedFor = rearmedFor.value else { return }
        #expect(all[1].scheduled == rearmedFor)
        #expect(all[1].actual >= rearmedFor)
        #expect(all[1].actual - rearmedFor <= ItemsSupport.slack)
    }

    /// The guest-loop pattern of Docs/Embedding.md: one timer, re-armed after each turn.
    @Test func oneTimerReArmedAfterEachFiringServesEveryTurn() {
        let fires = Counter()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(1)) { _ in fires.increment() }
            try! loop.add(timer)
            for _ in 0..<5 {
                loop.run(in: .default, for: .seconds(5))  // Finishes once the timer fired.
                timer.setNextFireTime(.now + .milliseconds(1))
            }
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(fires.current == 6)
    }

    @Test func aReArmedOneShotRejoinsEveryModeItWasInCommonModesIncluded() {
        let log = Recorder<String>()
        let fires = Recorder<String>()
        let tracking = Loop.Mode("tracking")
        let privateMode = Loop.Mode("private")
        ItemsSupport.onLoopThread { loop in
            loop.addCommonMode(tracking)
            let timer = try! LoopTimer(after: .zero) { _ in fires.append(Loop.current.currentMode?.name ?? "none") }
            try! loop.add(timer, to: .common)
            try! loop.add(timer, to: privateMode)
            @Sendable func membership() -> String {
                [Loop.Mode.common, .default, tracking, privateMode].map { "\(loop.contains(timer, in: $0))" }
                    .joined(separator: " ")
            }
            loop.run(in: privateMode, for: .seconds(5))
            log.append("fired: \(membership())")
            timer.setNextFireTime(.now)
            log.append("re-armed: \(membership())")
            loop.run(in: tracking, for: .seconds(5))
            // A common mode added while it was spent is joined too: the timer is back in the common modes.
            let later = Loop.Mode("later")
            timer.setNextFireTime(.now)
            loop.addCommonMode(later)
            log.append("later: \(loop.contains(timer, in: later))")
            timer.invalidate()
        }
        #expect(
            log.all == [
                "fired: false false false false", "re-armed: true true true true", "later: true",
            ])
        #expect(fires.all == ["private", "tracking"])
    }

    @Test func aModeTheSpentTimerWasRemovedFromIsNotRejoined() {
        let log = Recorder<String>()
        let other = Loop.Mode("other")
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .zero) { _ in }
            try! loop.add(timer)
            try! loop.add(timer, to: other)
            loop.run(in: .default, for: .seconds(5))
            loop.remove(timer, from: other)
            timer.setNextFireTime(.now + .seconds(3600))
            log.append("\(loop.contains(timer, in: .default)) \(loop.contains(timer, in: other))")
            timer.invalidate()
        }
        #expect(log.all == ["true false"])
    }

    @Test func invalidateIsFinalAReArmAfterItIsIgnored() {
        let log = Recorder<String>()
        let fires = Counter()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .zero) { _ in fires.increment() }
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(5))
            timer.invalidate()
            timer.setNextFireTime(.now)
            log.append("\(timer.isValid) \(loop.contains(timer))")
            log.append("\(loop.run(in: .default, for: .milliseconds(50)))")
            do {
                try loop.add(timer)
                log.append("added")
            } catch let error as LoopError {
                log.append("\(error.code)")
            } catch {
                log.append("other")
            }
        }
        #expect(log.all == ["false false", "finished", "invalidated"])
        #expect(fires.current == 1)
    }

    @Test func aFiredOneShotReArmedFromAnotherThreadWakesTheSleepingLoopAndFires() {
        let fires = Recorder<LoopTimerTests.Fire>()
        let timer = try! LoopTimer(after: .zero) { timer in
            fires.append(LoopTimerTests.Fire(scheduled: timer.nextFireTime, actual: .now))
        }
        let running = ItemsSupport.startRunningLoop { loop in try! loop.add(timer, to: .common) }
        defer { running.finish() }
        #expect(waitUntil { fires.count == 1 && !timer.isValid })
        #expect(waitUntil { running.loop.isWaiting })
        let target = Loop.Instant.now + .milliseconds(50)
        timer.setNextFireTime(target)
        #expect(timer.isValid)  // Valid again at once, on the calling thread.
        #expect(waitUntil { fires.count == 2 })
        #expect(waitUntil { running.loop.contains(timer) == false && !timer.isValid })
        guard fires.count == 2 else { return }
        #expect(fires.all[1].scheduled == target)
        #expect(fires.all[1].actual >= target)
        #expect(fires.all[1].actual - target <= ItemsSupport.slack)
    }

    /// A move sent from another thread while the timer fires reaches the loop after the firing it meant to move:
    /// it is void, as in CF, and the timer stays spent (no second firing the caller did not ask for).
    @Test func aMoveThatArrivesAfterTheFiringIsVoid() {
        let inHandler = ItemsSupport.Flag()
        let moved = ItemsSupport.Flag()
        let fires = Counter()
        let timer = try! LoopTimer(after: .zero) { _ in
            fires.increment()
            inHandler.set()
            _ = waitUntil { moved.isSet }
        }
        let running = ItemsSupport.startRunningLoop { loop in try! loop.add(timer) }
        defer { running.finish() }
        #expect(waitUntil { inHandler.isSet })
        #expect(timer.isValid)  // Its handler runs: valid, so the call is a move of this firing.
        timer.setNextFireTime(.now + .milliseconds(10))
        moved.set()
        #expect(waitUntil { !timer.isValid && running.loop.isWaiting })
        // The loop applied the move (it sleeps after its pass) and the timer stayed spent.
        #expect(!running.loop.contains(timer))
        #expect(fires.current == 1)
        timer.setNextFireTime(.now)  // Spent now: this re-arms it.
        #expect(waitUntil { fires.current == 2 })
    }

    /// Re-arms from other threads racing `invalidate()` and the loop's firing: a timer invalidated is never
    /// revived, and every re-arm of a spent timer that `invalidate()` did not overtake fires once.
    @Test func reArmsRacingInvalidationAndFiringNeverReviveAnInvalidatedTimer() {
        let count = 200
        let fires = Locked<[Int]>(Array(repeating: 0, count: count))
        let invalidated = Locked<[Bool]>(Array(repeating: false, count: count))
        let firedAfterInvalidate = Atomic<Int>(0)
        let timers = (0..<count).map { index in
            try! LoopTimer(after: .zero) { _ in
                if invalidated.withLock({ $0[index] }) { firedAfterInvalidate.add(1, ordering: .relaxed) }
                fires.withLock { $0[index] += 1 }
            }
        }
        let running = ItemsSupport.startRunningLoop { loop in for timer in timers { try! loop.add(timer) } }
        defer { running.finish() }
        #expect(waitUntil { fires.withLock { $0.allSatisfy { $0 == 1 } } })
        let rearming = TestThread {
            for timer in timers { timer.setNextFireTime(.now) }
        }
        for (index, timer) in timers.enumerated() where index % 2 == 0 {
            let done = ItemsSupport.Flag()
            running.loop.perform {
                timer.invalidate()
                invalidated.withLock { $0[index] = true }
                done.set()
            }
            _ = waitUntil { done.isSet }
        }
        rearming.join()
        let counts = { fires.withLock { $0 } }
        #expect(waitUntil { (0..<count).allSatisfy { index in index % 2 == 0 || counts()[index] == 2 } })
        #expect(waitUntil { timers.allSatisfy { !$0.isValid } })
        #expect(firedAfterInvalidate.load(ordering: .relaxed) == 0)
        for (index, timer) in timers.enumerated() where index % 2 == 0 {
            #expect(!running.loop.contains(timer))
            #expect(fires.withLock { $0[index] } <= 2)
        }
    }

    @Test func aFiredOneShotOfAnExitedThreadIsReArmedIntoNoModeAndCanJoinAnotherLoop() throws {
        let fires = Recorder<String>()
        let timer = try LoopTimer(after: .zero) { _ in fires.append(Loop.current.currentMode?.name ?? "none") }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(timer, to: Loop.Mode("gone"))
            loop.run(in: Loop.Mode("gone"), for: .seconds(5))
        }
        #expect(fires.all == ["gone"])
        let target = Loop.Instant.now + .milliseconds(20)
        timer.setNextFireTime(target)
        #expect(timer.isValid)
        #expect(timer.nextFireTime == target)
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        try running.loop.add(timer)
        #expect(waitUntil { fires.count == 2 })
        #expect(fires.all == ["gone", "default"])
        #expect(waitUntil { !timer.isValid })
        // Re-armed in its new loop: it rejoins that loop's default mode, not the dead loop's mode ids.
        timer.setNextFireTime(.now)
        #expect(waitUntil { fires.count == 3 })
        #expect(fires.all.last == "default")
    }
}
