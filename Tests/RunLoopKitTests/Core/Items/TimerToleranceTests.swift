import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Timer tolerance: the window [fire time, fire time + tolerance], clamping, and shared wake-ups.
@Suite struct TimerToleranceTests {
    @Test func oneShotWithToleranceFiresInsideItsWindow() {
        let fired = Box<Loop.Instant>()
        let scheduled = Box<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(50), tolerance: .milliseconds(100)) { _ in
                fired.value = .now
            }
            scheduled.value = timer.nextFireTime
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(5))
        }
        guard let fired = fired.value, let scheduled = scheduled.value else {
            Issue.record("the timer did not fire")
            return
        }
        #expect(fired >= scheduled, "fired early")
        #expect(fired - scheduled <= .milliseconds(100) + ItemsSupport.slack, "fired after its window")
    }

    @Test func repeatingTimerWithToleranceStaysOnItsGridInsideItsWindows() {
        let fires = Recorder<LoopTimerTests.Fire>()
        let first = Box<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(
                after: .milliseconds(40),
                repeating: .milliseconds(40),
                tolerance: .milliseconds(15)
            ) { timer in
                fires.append(.init(scheduled: timer.nextFireTime, actual: .now))
                if fires.count == 4 { timer.invalidate() }
            }
            first.value = timer.nextFireTime
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(fires.count == 4)
        guard let first = first.value else { return }
        for fire in fires.all {
            #expect(fire.actual >= fire.scheduled, "fired early")
            #expect(fire.actual - fire.scheduled <= .milliseconds(15) + ItemsSupport.slack, "fired after its window")
            #expect((fire.scheduled.nanoseconds - first.nanoseconds) % 40_000_000 == 0, "off the grid")
        }
    }

    @Test func toleranceOfARepeatingTimerIsClampedToHalfItsInterval() throws {
        let interval: Duration = .milliseconds(100)
        let repeating = try LoopTimer(after: .seconds(1), repeating: interval, tolerance: .seconds(1)) { _ in }
        #expect(repeating.tolerance == .milliseconds(50))
        let oneShot = try LoopTimer(after: .seconds(1), tolerance: .seconds(1)) { _ in }
        #expect(oneShot.tolerance == .seconds(1))
        let small = try LoopTimer(after: .seconds(1), repeating: interval, tolerance: .milliseconds(10)) { _ in }
        #expect(small.tolerance == .milliseconds(10))
        #expect(throws: LoopError.self) { try LoopTimer(after: .seconds(1), tolerance: .nanoseconds(-1)) { _ in } }
    }

    @Test func overlappingToleranceWindowsShareOneWakeUp() {
        let events = Recorder<String>()
        let deadlines = Recorder<Loop.Instant>()
        let actuals = Recorder<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            // Windows [100, 200] and [150, 250] ms: one wake-up at 200 ms serves both.
            let a = try! LoopTimer(after: .milliseconds(100), tolerance: .milliseconds(100)) { _ in
                events.append("a")
                actuals.append(.now)
            }
            let b = try! LoopTimer(after: .milliseconds(150), tolerance: .milliseconds(100)) { _ in
                events.append("b")
                actuals.append(.now)
            }
            deadlines.append(a.nextFireTime)
            deadlines.append(b.nextFireTime)
            try! loop.add(LoopObserver(activities: .afterWaiting) { _, _ in events.append("afterWaiting") })
            try! loop.add(a)
            try! loop.add(b)
            loop.run(in: .default, for: .seconds(5))
        }
        let all = events.all
        #expect(all.filter { $0 != "afterWaiting" }.sorted() == ["a", "b"])
        // The same wake-up: as many afterWaiting before each timer's fire.
        let wakesBefore = { (name: String) -> Int in
            guard let index = all.firstIndex(of: name) else { return -1 }
            return all[..<index].filter { $0 == "afterWaiting" }.count
        }
        #expect(wakesBefore("a") == wakesBefore("b"))
        #expect(all.filter { $0 == "afterWaiting" }.count == 1)
        let d = deadlines.all
        for actual in actuals.all {
            #expect(actual >= d[1], "fired before the later timer's fire time: not one shared wake-up")
            #expect(actual - d[0] <= .milliseconds(100) + ItemsSupport.slack)
        }
    }
}
