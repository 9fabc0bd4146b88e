import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Timers: one-shot and repeating firing, the grid, rescheduling, invalidation, modes, errors and ordering.
@Suite struct LoopTimerTests {
    /// A fire: the time being fired (``LoopTimer/nextFireTime`` inside the handler) and when the handler ran.
    struct Fire: Sendable {
        let scheduled: Loop.Instant
        let actual: Loop.Instant
    }

    @Test func oneShotFiresOnceNeverEarlyAndIsInvalidated() {
        let fires = Recorder<Fire>()
        let scheduled = Box<Loop.Instant>()
        let after = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(50)) { timer in
                fires.append(Fire(scheduled: timer.nextFireTime, actual: .now))
            }
            try! loop.add(timer)
            scheduled.value = timer.nextFireTime
            let result = loop.run(in: .default, for: .seconds(5))
            after.append("\(result) \(timer.isValid)")
        }
        #expect(fires.count == 1)
        guard let fire = fires.all.first, let scheduled = scheduled.value else { return }
        #expect(fire.scheduled == scheduled)
        #expect(fire.actual >= scheduled)
        #expect(fire.actual - scheduled <= ItemsSupport.slack)
        #expect(after.all == ["finished false"])
    }

    @Test func repeatingTimerFiresOnItsGrid() {
        let fires = Recorder<Fire>()
        let first = Box<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(30), repeating: .milliseconds(30)) { timer in
                fires.append(Fire(scheduled: timer.nextFireTime, actual: .now))
                if fires.count == 5 { timer.invalidate() }
            }
            first.value = timer.nextFireTime
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(5))
        }
        let all = fires.all
        #expect(all.count == 5)
        guard let first = first.value else { return }
        var previous: Loop.Instant?
        for fire in all {
            #expect(fire.actual >= fire.scheduled)
            #expect((fire.scheduled.nanoseconds - first.nanoseconds) % 30_000_000 == 0, "off the grid")
            if let previous { #expect(fire.scheduled > previous) }
            previous = fire.scheduled
        }
        #expect(all.first?.scheduled == first)
    }

    @Test func longCalloutSkipsMissedFireTimesAndKeepsTheGrid() {
        let fires = Recorder<Fire>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(100), repeating: .milliseconds(100)) { timer in
                fires.append(Fire(scheduled: timer.nextFireTime, actual: .now))
                if fires.count == 1 { usleep(350_000) }
                if fires.count == 3 { timer.invalidate() }
            }
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(5))
        }
        let all = fires.all
        #expect(all.count == 3)
        guard all.count == 3 else { return }
        let interval: Int64 = 100_000_000
        let gap = all[1].scheduled.nanoseconds - all[0].scheduled.nanoseconds
        // The callout ran until first + 350 ms: the fire times at +100, +200 and +300 ms were skipped, not piled up.
        #expect(gap % interval == 0)
        #expect(gap >= 4 * interval)
        #expect(all[1].actual >= all[0].actual + .milliseconds(350))
        #expect(all[2].scheduled.nanoseconds - all[1].scheduled.nanoseconds == interval)
        for fire in all { #expect(fire.actual >= fire.scheduled) }
    }

    @Test func setNextFireTimeOutsideTheHandlerMovesTheFireEarlierOrLater() {
        let fires = Recorder<String>()
        let targets = Recorder<Loop.Instant>()
        let actuals = Recorder<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let earlier = try! LoopTimer(after: .seconds(60)) { _ in
                fires.append("earlier")
                actuals.append(.now)
            }
            let later = try! LoopTimer(after: .milliseconds(20)) { _ in
                fires.append("later")
                actuals.append(.now)
            }
            try! loop.add(earlier)
            try! loop.add(later)
            let earlierTarget = Loop.Instant.now + .milliseconds(50)
            let laterTarget = Loop.Instant.now + .milliseconds(250)
            earlier.setNextFireTime(earlierTarget)
            later.setNextFireTime(laterTarget)
            targets.append(earlierTarget)
            targets.append(laterTarget)
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(fires.all == ["earlier", "later"])
        let t = targets.all
        let a = actuals.all
        guard t.count == 2, a.count == 2 else { return }
        #expect(a[0] >= t[0] && a[0] - t[0] <= ItemsSupport.slack)
        #expect(a[1] >= t[1] && a[1] - t[1] <= ItemsSupport.slack)
    }

    @Test func setNextFireTimeInsideTheHandlerReArmsAOneShotTimer() {
        let fires = Recorder<Fire>()
        let rearmedFor = Box<Loop.Instant>()
        let after = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(10)) { timer in
                fires.append(Fire(scheduled: timer.nextFireTime, actual: .now))
                if fires.count == 1 {
                    let next = Loop.Instant.now + .milliseconds(30)
                    rearmedFor.value = next
                    timer.setNextFireTime(next)
                }
            }
            try! loop.add(timer)
            let result = loop.run(in: .default, for: .seconds(5))
            after.append("\(result) \(timer.isValid)")
        }
        #expect(fires.count == 2)
        guard fires.count == 2, let rearmedFor = rearmedFor.value else { return }
        #expect(fires.all[1].scheduled == rearmedFor)
        #expect(fires.all[1].actual >= rearmedFor)
        #expect(after.all == ["finished false"])
    }

    /// Iteration.md: after its handler a repeating timer goes back on its grid, `fire time + k × interval`; a
    /// handler that re-arms it moves that fire time, so the grid continues from the new time.
    @Test func setNextFireTimeInsideARepeatingTimersHandlerMovesItsGrid() {
        let fires = Recorder<Fire>()
        let rearmedFor = Box<Loop.Instant>()
        let interval: Int64 = 30_000_000
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(10), repeating: .nanoseconds(interval)) { timer in
                fires.append(Fire(scheduled: timer.nextFireTime, actual: .now))
                if fires.count == 1 {
                    let next = Loop.Instant.now + .milliseconds(100)  // Not on the old grid (+30, +60, +90 ms).
                    rearmedFor.value = next
                    timer.setNextFireTime(next)
                }
                if fires.count == 4 { timer.invalidate() }
            }
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(5))
        }
        let all = fires.all
        #expect(all.count == 4)
        guard all.count == 4, let rearmedFor = rearmedFor.value else { return }
        // No fire on the old grid in between: the second fire is the re-armed one.
        #expect(all[1].scheduled == rearmedFor)
        #expect((rearmedFor.nanoseconds - all[0].scheduled.nanoseconds) % interval != 0)
        var previous = rearmedFor
        for fire in all[2...] {
            let offset = fire.scheduled.nanoseconds - rearmedFor.nanoseconds
            #expect(offset % interval == 0, "off the new grid by \(offset % interval) ns")
            #expect(fire.scheduled > previous)
            previous = fire.scheduled
        }
        for fire in all { #expect(fire.actual >= fire.scheduled) }
    }

    @Test func setNextFireTimeFromAnotherThreadWakesTheSleepingLoop() {
        let fired = Box<Loop.Instant>()
        let timerBox = Box<LoopTimer>()
        let (loop, thread) = startLoopThread { loop in
            let timer = try! LoopTimer(after: .seconds(60)) { _ in
                fired.value = .now
                loop.stop()
            }
            try! loop.add(timer)
            timerBox.value = timer
            loop.run(in: .default, for: .seconds(10))  // One long run: the loop really sleeps.
        }
        #expect(waitUntil { timerBox.value != nil && loop.isWaiting })
        let target = Loop.Instant.now + .milliseconds(100)
        timerBox.value?.setNextFireTime(target)
        thread.join()
        #expect(fired.value != nil)
        guard let actual = fired.value else { return }
        #expect(actual >= target)
        #expect(actual - target <= ItemsSupport.slack)
    }

    @Test func invalidatingInsideTheHandlerStopsRepeats() {
        let fires = Counter()
        let results = Recorder<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { timer in
                if fires.increment() == 3 { timer.invalidate() }
            }
            try! loop.add(timer)
            results.append(loop.run(in: .default, for: .seconds(5)))
        }
        #expect(fires.current == 3)
        #expect(results.all == [.finished])  // Nothing left in the mode once the timer is gone.
    }

    @Test func invalidatedOnTheLoopThreadNeverFiresAgain() {
        let invalidated = ItemsSupport.Flag()
        let lateFires = Counter()
        let fires = Counter()
        ItemsSupport.onLoopThread { loop in
            let repeating = try! LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in
                fires.increment()
                if invalidated.isSet { lateFires.increment() }
            }
            // Due at the same times as the repeating timer now and then, so some passes have both due.
            let killer = try! LoopTimer(after: .milliseconds(50)) { _ in
                repeating.invalidate()
                invalidated.set()
            }
            try! loop.add(repeating)
            try! loop.add(killer)
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .milliseconds(200))
        }
        #expect(invalidated.isSet)
        #expect(fires.current >= 1)
        #expect(lateFires.current == 0)
    }

    @Test func invalidatedFromAnotherThreadStopsFiring() {
        let returned = ItemsSupport.Flag()
        let lateFires = Counter()
        let fires = Counter()
        let timerBox = Box<LoopTimer>()
        let running = ItemsSupport.startRunningLoop { loop in
            let timer = try! LoopTimer(after: .milliseconds(2), repeating: .milliseconds(2)) { _ in
                if returned.isSet { lateFires.increment() }
                fires.increment()
            }
            try! loop.add(timer)
            timerBox.value = timer
        }
        #expect(waitUntil { fires.current >= 5 })
        timerBox.value?.invalidate()
        returned.set()
        // A block posted now runs after the invalidation reached the loop; fires after it would be a bug.
        let passed = ItemsSupport.Flag()
        running.loop.perform { passed.set() }
        #expect(waitUntil { passed.isSet })
        let firesAtBlock = fires.current
        let check = ItemsSupport.Flag()
        _ = try? running.loop.add(LoopTimer(after: .milliseconds(30)) { _ in check.set() })
        #expect(waitUntil { check.isSet })
        running.finish()
        #expect(fires.current == firesAtBlock)
        // From another thread a fire that had already started may finish; no new one may start.
        #expect(lateFires.current <= 1)
        #expect(timerBox.value?.isValid == false)
    }

    @Test func timerDueInThePastFiresAtOnce() {
        let elapsed = Box<Duration>()
        ItemsSupport.onLoopThread { loop in
            let start = Loop.Instant.now
            let timer = try! LoopTimer(at: start + .seconds(-1)) { _ in elapsed.value = Loop.Instant.now - start }
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(elapsed.value != nil)
        #expect((elapsed.value ?? .seconds(99)) <= ItemsSupport.slack)
    }

    @Test func timerInAModeNotRunningFiresWhenItsModeRunsWithoutSpinning() {
        let fires = Recorder<String>()
        let passes = Counter()
        let results = Recorder<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(30)) { _ in fires.append(loop.currentMode?.name ?? "-") }
            try! loop.add(timer, to: "other")
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in passes.increment() })
            results.append(loop.run(in: .default, for: .milliseconds(300)))
            results.append(loop.run(in: "other", for: .seconds(5)))
        }
        #expect(results.all == [.timedOut, .finished])
        #expect(fires.all == ["other"])
        #expect(passes.current <= 5, "the loop spun \(passes.current) passes while the timer was due")
    }

    @Test func invalidIntervalsAndTolerancesThrow() {
        var codes: [LoopError.Code] = []
        let intervals: [Duration] = [.zero, .milliseconds(-1), LoopTimer.maximumInterval + .seconds(1)]
        for interval in intervals {
            do throws(LoopError) {
                _ = try LoopTimer(after: .seconds(1), repeating: interval) { _ in }
            } catch {
                codes.append(error.code)
            }
        }
        do throws(LoopError) {
            _ = try LoopTimer(after: .seconds(1), tolerance: .milliseconds(-1)) { _ in }
        } catch {
            codes.append(error.code)
        }
        #expect(codes == [.invalidInterval, .invalidInterval, .invalidInterval, .invalidTolerance])
        #expect((try? LoopTimer(after: .seconds(1), repeating: LoopTimer.maximumInterval) { _ in }) != nil)
    }

    /// Something a handler captures, counted when it is freed: with the timer, as its handler's context goes.
    final class LifetimeToken: Sendable {
        let freed: Counter
        init(_ freed: Counter) { self.freed = freed }
        deinit { freed.increment() }
    }

    /// A timer held weakly, for a handler that must not keep another timer alive.
    final class WeakTimer: @unchecked Sendable {  // Unchecked: the reference is set once, in the initialiser.
        weak var timer: LoopTimer?
        init(_ timer: LoopTimer) { self.timer = timer }
    }

    /// The loop holds a timer while it is in a mode, and only then: a timer the program let go of still fires (a
    /// one-shot once, a repeating one until its handler invalidates it) and is freed as it leaves its modes, during
    /// the run, not at the thread's exit. A pass holds the timers it is firing, so a handler that invalidates its
    /// own timer, or an earlier one of the same pass, frees nothing under a running handler.
    @Test func theLoopHoldsATimerWhileItIsInAModeAndFreesItAfter() {
        let freed = Counter()
        let fires = Recorder<String>()
        let freedWhenRunEnded = Box<Int>()
        ItemsSupport.onLoopThread { loop in
            do {
                let oneShotToken = LifetimeToken(freed)
                try! loop.add(
                    try! LoopTimer(after: .milliseconds(5)) { _ in
                        withExtendedLifetime(oneShotToken) { fires.append("once") }
                    })
                let repeatingToken = LifetimeToken(freed)
                let ticks = Counter()
                try! loop.add(
                    try! LoopTimer(after: .milliseconds(1), repeating: .milliseconds(2)) { timer in
                        withExtendedLifetime(repeatingToken) {
                            fires.append("tick")
                            if ticks.increment() == 3 { timer.invalidate() }
                        }
                    })
                // Two due in one pass: the first invalidates the second, which the pass still holds.
                let firstToken = LifetimeToken(freed)
                let secondToken = LifetimeToken(freed)
                let due = Loop.Instant.now + .milliseconds(20)  // Equal times fire in the order added.
                let second = try! LoopTimer(at: due) { _ in
                    withExtendedLifetime(secondToken) { fires.append("second") }
                }
                // Held weakly, so once invalidated only the pass holds it (under ASan a pass that did not would read
                // freed memory).
                let secondReference = WeakTimer(second)
                try! loop.add(
                    try! LoopTimer(at: due) { _ in
                        withExtendedLifetime(firstToken) { fires.append("first") }
                        secondReference.timer?.invalidate()
                    })
                try! loop.add(second)
            }
            #expect(freed.current == 0, "the loop holds the timers it was given")
            let result = loop.run(in: .default, for: .seconds(10))
            freedWhenRunEnded.value = freed.current
            #expect(result == .finished)
        }
        #expect(freedWhenRunEnded.value == 4, "every timer was freed once out of its modes, before the run ended")
        #expect(fires.all.filter { $0 == "tick" }.count == 3)
        #expect(fires.all.contains("once"))
        #expect(fires.all.contains("first"))
        #expect(!fires.all.contains("second"), "invalidated by an earlier handler of its pass")
    }

    /// The timer keeps its interval and tolerance in whole nanoseconds, as the loop uses them, and reports those.
    @Test func intervalAndToleranceAreReportedAsTheLoopKeepsThem() throws {
        let repeating = try LoopTimer(after: .seconds(1), repeating: .milliseconds(10), tolerance: .seconds(1)) { _ in }
        #expect(repeating.interval == .milliseconds(10))
        #expect(repeating.repeats)
        #expect(repeating.tolerance == .milliseconds(5), "clamped to half the interval")

        let oneShot = try LoopTimer(after: .seconds(1), tolerance: .microseconds(250)) { _ in }
        #expect(oneShot.interval == nil)
        #expect(!oneShot.repeats)
        #expect(oneShot.tolerance == .microseconds(250))

        let fine = try LoopTimer(after: .seconds(1), repeating: .nanoseconds(1) / 2, tolerance: .nanoseconds(1) / 4) {
            _ in
        }
        #expect(fine.interval == .nanoseconds(1), "a repeating timer's interval is at least one nanosecond")
        #expect(fine.tolerance == .zero)
        #expect((try LoopTimer(after: .seconds(1), tolerance: .zero) { _ in }).tolerance == .zero)
    }

    @Test func timerAddedFromAnotherThreadToASleepingLoopFiresOnTime() {
        let fired = Box<Loop.Instant>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .seconds(10))  // One long run: the loop really sleeps.
        }
        #expect(waitUntil { loop.isWaiting })
        let timer = try! LoopTimer(after: .milliseconds(100)) { _ in
            fired.value = .now
            Loop.current.stop()
        }
        let scheduled = timer.nextFireTime
        try! loop.add(timer)
        thread.join()
        #expect(fired.value != nil)
        guard let actual = fired.value else { return }
        #expect(actual >= scheduled)
        #expect(actual - scheduled <= ItemsSupport.slack)
    }

    @Test func dueTimersFireInDeadlineOrderTiesInInsertionOrder() {
        let order = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let base = Loop.Instant.now + .milliseconds(-100)
            let plan: [(String, Duration)] = [
                ("c", .milliseconds(2)), ("a", .zero), ("b", .zero), ("d", .milliseconds(1)), ("e", .zero),
            ]
            for (name, offset) in plan {
                try! loop.add(LoopTimer(at: base + offset) { _ in order.append(name) })
            }
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(order.all == ["a", "b", "e", "d", "c"])
    }

    /// A due timer removed from the running mode by an earlier handler of the same pass does not fire there (CF
    /// fires it anyway); still in another mode, it fires once when that mode runs.
    @Test func dueTimerRemovedFromTheRunningModeByAnEarlierHandlerFiresInItsOtherMode() {
        let recorder = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let past = Loop.Instant.now + .milliseconds(-10)
            let late = try! LoopTimer(at: past + .milliseconds(1)) { _ in
                recorder.append("late in \(loop.currentMode?.name ?? "-")")
            }
            let early = try! LoopTimer(at: past) { _ in
                recorder.append("early")
                loop.remove(late)
            }
            try! loop.add(early)
            try! loop.add(late)
            try! loop.add(late, to: "other")
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .zero)
            recorder.append("valid \(late.isValid)")
            loop.run(in: "other", for: .zero)
            loop.run(in: "other", for: .zero)
            recorder.append("valid \(late.isValid)")
        }
        #expect(recorder.all == ["early", "valid true", "late in other", "valid false"])
    }
}
