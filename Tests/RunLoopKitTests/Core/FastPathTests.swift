import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// The costly system calls the fast paths promise to avoid, counted: eventfd writes (only to wake a sleeping loop,
/// at most one per sleep) and timerfd arms (only when the earliest deadline moves earlier, at most one per sleep).
@Suite struct FastPathTests {
    /// `Duration.isZero` reads the two words of a `Duration` instead of calling the standard library's `==`: it must
    /// agree with `== .zero` everywhere, the smallest durations either side of zero and the extremes included.
    @Test func durationIsZeroAgreesWithTheStandardLibrary() {
        let durations: [Duration] = [
            .zero, .nanoseconds(0), .seconds(0), .init(secondsComponent: 0, attosecondsComponent: 1),
            .init(secondsComponent: 0, attosecondsComponent: -1), .init(secondsComponent: 1, attosecondsComponent: 0),
            .init(secondsComponent: -1, attosecondsComponent: 0), .nanoseconds(Int64.max), .nanoseconds(Int64.min),
            .seconds(1) - .seconds(1), LoopTimer.maximumInterval,
        ]
        for duration in durations {
            #expect(duration.isZero == (duration == .zero), "\(duration)")
        }
    }

    @Test func signalsToAnAwakeLoopNeverWriteTheEventFD() {
        let performs = Counter()
        let source = LoopSource { _ in performs.increment() }
        let signallerDone = ItemsSupport.Flag()
        let inBusyBlock = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(source)
            loop.perform {
                // The loop is awake, running this block, until the other thread has signalled 10,000 times.
                inBusyBlock.set()
                _ = waitUntil { signallerDone.isSet }
            }
            ItemsSupport.run(loop) { performs.current >= 1 }
        }
        #expect(waitUntil { inBusyBlock.isSet })
        let writesBefore = loop.wakeUpWrites
        for _ in 0..<10_000 { source.signal() }
        let writesWhileAwake = loop.wakeUpWrites - writesBefore
        signallerDone.set()
        thread.join()
        source.invalidate()
        #expect(writesWhileAwake == 0)
        #expect(performs.current == 1)  // 10,000 signals before a pass coalesce into one perform.
    }

    @Test func wakersOfASleepingLoopWriteTheEventFDAtMostOncePerSleep() {
        let performs = Counter()
        let sleeps = Counter()
        let source = LoopSource { _ in performs.increment() }
        let total = 4 * 2_000
        let signalled = Counter()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(source)
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in sleeps.increment() })
            ItemsSupport.run(loop) { signalled.current == total && !source.isSignalled }
        }
        #expect(waitUntil { loop.isWaiting })
        let writesBefore = loop.wakeUpWrites
        let signallers = (0..<4).map { _ in
            TestThread {
                for _ in 0..<2_000 {
                    source.signal()
                    signalled.increment()
                }
            }
        }
        for signaller in signallers { signaller.join() }
        loop.wakeUp()  // Makes the final check of the run's condition happen promptly.
        thread.join()
        source.invalidate()
        let writes = loop.wakeUpWrites - writesBefore
        #expect(writes >= 1)
        #expect(writes <= sleeps.current)
        #expect(writes < total / 10)  // Coalesced: nowhere near one write per signal.
        #expect(performs.current >= 1)
    }

    @Test func laterTimersNeverReArmTheTimerFDAndAnEarlierOneArmsItOnce() throws {
        let result = Box<Loop.RunResult>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(try! LoopTimer(after: .seconds(10)) { _ in })
            result.value = loop.run(in: .default, for: .seconds(60))
        }
        // Each figure is read by a block in the pass after a sleep, so that sleep's arming is counted.
        let afterFirstSleep = Self.armsAfterNextSleep(of: loop)
        // 1,000 later timers, added from this thread (each add wakes the loop): the armed 10 s expiry still
        // comes first, so the timerfd is left alone.
        for index in 0..<1_000 {
            try loop.add(try LoopTimer(after: .seconds(20) + .milliseconds(index)) { _ in })
        }
        let afterLaterTimers = Self.armsAfterNextSleep(of: loop)
        // An earlier timer moves the earliest deadline: exactly one re-arm.
        try loop.add(try LoopTimer(after: .seconds(5)) { _ in })
        let afterEarlierTimer = Self.armsAfterNextSleep(of: loop)
        loop.stop()
        thread.join()
        #expect(afterFirstSleep >= 1)
        #expect(afterLaterTimers == afterFirstSleep)
        #expect(afterEarlierTimer == afterFirstSleep + 1)
        #expect(result.value == .stopped)
    }

    /// Waits until `loop` has applied everything sent so far and gone back to sleep, then answers its timerfd arm
    /// count, read on the loop's thread in the pass after that sleep.
    private static func armsAfterNextSleep(of loop: Loop) -> Int {
        let applied = ItemsSupport.Flag()
        loop.perform { applied.set() }
        _ = waitUntil { applied.isSet }
        _ = waitUntil { loop.isWaiting }
        let arms = Box<Int>()
        loop.perform { arms.value = loop.poller.timerArms.load(ordering: .relaxed) }
        _ = waitUntil { arms.value != nil }
        return arms.value ?? -1
    }

    @Test func firingManyDueTimersArmsTheTimerFDAtMostOncePerSleep() {
        let firedCount = Counter()
        let sleeps = Counter()
        let armsUsed = Box<Int>()
        let timerCount = 2_000
        ItemsSupport.onLoopThread { loop in
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in sleeps.increment() })
            let start = Loop.Instant.now
            for index in 0..<timerCount {
                // Spread over 200 ms, with 1 ms of tolerance so neighbours share wake-ups.
                let due = start + .microseconds(100 * index)
                try! loop.add(try! LoopTimer(at: due, tolerance: .milliseconds(1)) { _ in firedCount.increment() })
            }
            let armsBefore = loop.poller.timerArms.load(ordering: .relaxed)
            ItemsSupport.run(loop) { firedCount.current == timerCount }
            armsUsed.value = loop.poller.timerArms.load(ordering: .relaxed) - armsBefore
        }
        #expect(firedCount.current == timerCount)
        let arms = armsUsed.value ?? .max
        #expect(arms <= sleeps.current)
        #expect(arms < timerCount / 4)  // CF arms once per fired timer.
    }

    @Test func timersCloserThanTheSleepHorizonArePolledForNotSleptFor() {
        let fired = Recorder<Int64>()  // lateness in nanoseconds
        let armsUsed = Box<Int>()
        let count = 200
        ItemsSupport.onLoopThread { loop in
            let start = Loop.Instant.now + .milliseconds(30)
            // 5 µs apart, well inside the horizon: after the first, no wait is worth a timerfd arm.
            for index in 0..<count {
                let due = start + .microseconds(5 * index)
                try! loop.schedule(at: due) { fired.append((Loop.Instant.now - due).saturatingNanoseconds) }
            }
            let armsBefore = loop.poller.timerArms.load(ordering: .relaxed)
            ItemsSupport.run(loop) { fired.count == count }
            armsUsed.value = loop.poller.timerArms.load(ordering: .relaxed) - armsBefore
        }
        #expect(fired.count == count)
        #expect(fired.all.allSatisfy { $0 >= 0 })  // Polling never fires early.
        // One arm for the first callback, a few for the ends of ItemsSupport.run's 20 ms runs; without the horizon
        // most of the 199 short waits would arm the timerfd.
        #expect((armsUsed.value ?? .max) <= 8)
    }
}
