import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// `stop()`, `wakeUp()` and `isWaiting`, from the loop's thread and from others.
@Suite struct StopAndWakeUpTests {
    // MARK: Stop

    @Test func stopFromAnotherThreadEndsASleepingRunPromptly() {
        let result = Box<Loop.RunResult>()
        let returnedAt = Box<Loop.Instant>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            result.value = loop.run(in: .default, for: .seconds(10))
            returnedAt.value = .now
        }
        #expect(waitUntil { loop.isWaiting })
        let stoppedAt = Loop.Instant.now
        loop.stop()
        thread.join()
        #expect(result.value == .stopped)
        #expect(returnedAt.value! - stoppedAt < CoreRunSupport.slack)
    }

    @Test func aStopWhileIdleOnTheLoopThreadIsForgotten() {
        let results = Recorder<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            loop.stop()
            results.append(loop.run(in: .default, for: .milliseconds(100)))
        }
        #expect(results.all == [.timedOut])
    }

    @Test func aStopWhileIdleFromAnotherThreadIsForgotten() {
        let stopSent = ItemsSupport.Flag()
        let result = Box<Loop.RunResult>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            _ = waitUntil { stopSent.isSet }
            result.value = loop.run(in: .default, for: .milliseconds(100))
        }
        loop.stop()
        stopSent.set()
        thread.join()
        #expect(result.value == .timedOut)
    }

    @Test func aStopInsideANestedRunEndsOnlyThatRun() {
        let events = Recorder<String>()
        let outer = Box<Loop.RunResult>()
        let elapsed = Box<Duration>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            loop.perform {
                loop.perform { loop.stop() }
                events.append("inner \(loop.run(in: .default, for: .seconds(5)))")
            }
            let start = Loop.Instant.now
            outer.value = loop.run(in: .default, for: .milliseconds(200))
            elapsed.value = CoreRunSupport.elapsed(since: start)
        }
        #expect(events.all == ["inner stopped"])
        #expect(outer.value == .timedOut)
        #expect(elapsed.value! >= .milliseconds(200))
    }

    // MARK: Wake-up

    @Test func wakeUpFromAnotherThreadWakesASleepingLoop() {
        let activities = Recorder<String>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            CoreRunSupport.recordActivities(
                of: loop, into: activities, activities: [.beforeWaiting, .afterWaiting])
            loop.run(in: .default, for: .seconds(10), returnAfterSourceHandled: false)
        }
        #expect(waitUntil { loop.isWaiting })
        #expect(activities.all == ["beforeWaiting"])
        loop.wakeUp()
        #expect(waitUntil(timeout: CoreRunSupport.slack) { activities.count >= 2 })
        loop.stop()
        thread.join()
        #expect(Array(activities.all.prefix(2)) == ["beforeWaiting", "afterWaiting"])
    }

    /// Where the ten wake-ups of a busy loop come from.
    enum Waker: CaseIterable {
        /// A block on the loop's own thread.
        case theLoopThread
        /// Another thread, while the loop is busy in a block.
        case anotherThread
    }

    @Test(arguments: Waker.allCases)
    func wakeUpsSentWhileAwakeCoalesceIntoOneExtraPass(from waker: Waker) {
        let activities = Recorder<String>()
        let result = Box<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            loop.perform {
                switch waker {
                case .theLoopThread:
                    for _ in 0..<10 { loop.wakeUp() }
                case .anotherThread:
                    // The loop is busy in this block while another thread sends ten wake-ups.
                    let waker = TestThread { for _ in 0..<10 { loop.wakeUp() } }
                    waker.join()
                }
            }
            CoreRunSupport.recordActivities(
                of: loop, into: activities, activities: [.beforeWaiting, .afterWaiting])
            result.value = loop.run(in: .default, for: .milliseconds(300))
        }
        #expect(result.value == .timedOut)
        // One pass that did not sleep (the ten wake-ups), then one that slept until the time limit.
        #expect(activities.all == ["beforeWaiting", "afterWaiting", "beforeWaiting", "afterWaiting"])
    }

    @Test func aWakeUpWhileIdleIsDropped() {
        let events = Recorder<String>()
        let timerFireTime = Box<Loop.Instant>()
        let firstAfterWaiting = Box<Loop.Instant>()
        let wakeSent = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            _ = waitUntil { wakeSent.isSet }
            loop.wakeUp()  // And one from the loop's own thread.
            let timer = try! LoopTimer(after: .milliseconds(200)) { _ in events.append("timer") }
            timerFireTime.value = timer.nextFireTime
            try! loop.add(timer)
            try! loop.add(
                LoopObserver(activities: .all) { _, activity in
                    if activity == .afterWaiting && firstAfterWaiting.value == nil { firstAfterWaiting.value = .now }
                    events.append("\(activity)")
                })
            loop.run(in: .default, for: .seconds(10))
        }
        loop.wakeUp()
        wakeSent.set()
        thread.join()
        // A remembered wake-up would show as an extra beforeWaiting/afterWaiting pair before the timer.
        #expect(
            events.all == [
                "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer", "exit",
            ])
        #expect(firstAfterWaiting.value! >= timerFireTime.value!)
    }

    @Test func isWaitingIsTrueWhileTheLoopSleeps() {
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .seconds(10))
        }
        #expect(waitUntil { loop.isWaiting })
        // Still asleep a moment later: nothing wakes it.
        #expect(loop.isWaiting)
        loop.stop()
        thread.join()
        #expect(!loop.isWaiting)
    }
}
