import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Why `run(in:for:returnAfterSourceHandled:)` returns: finished, timedOut, handledSource (stopped: see
/// StopAndWakeUpTests).
@Suite struct RunResultTests {
    // MARK: Finished before starting

    @Test func aModeWithOnlyObserversFinishesAtOnceWithoutEntryOrExit() {
        let activities = Recorder<String>()
        let result = Box<Loop.RunResult>()
        let elapsed = Box<Duration>()
        ItemsSupport.onLoopThread { loop in
            CoreRunSupport.recordActivities(of: loop, into: activities)
            let start = Loop.Instant.now
            result.value = loop.run(in: .default, for: .seconds(5))
            elapsed.value = CoreRunSupport.elapsed(since: start)
        }
        #expect(result.value == .finished)
        #expect(activities.all.isEmpty)
        #expect(elapsed.value! < .seconds(1))
    }

    @Test func aModeEmptiedByRemovingItsSourceFinishesWithoutEntryOrExit() {
        let activities = Recorder<String>()
        let results = Recorder<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in }
            try! loop.add(source, to: "tracking")
            CoreRunSupport.recordActivities(of: loop, in: "tracking", into: activities)
            results.append(loop.run(in: "tracking", for: .zero))
            activities.removeAll()
            loop.remove(source, from: "tracking")
            results.append(loop.run(in: "tracking", for: .seconds(5)))
        }
        #expect(results.all == [.timedOut, .finished])
        #expect(activities.all.isEmpty)
    }

    @Test func aBeforeWaitingCalloutThatEmptiesTheModeFinishesTheRunWithoutSleeping() {
        let result = Box<Loop.RunResult>()
        let elapsed = Box<Duration>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in }
            try! loop.add(source)
            try! loop.add(LoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in source.invalidate() })
            let start = Loop.Instant.now
            result.value = loop.run(in: .default, for: .seconds(30))
            elapsed.value = CoreRunSupport.elapsed(since: start)
        }
        // CF would sleep the full 30 s and answer timedOut: nothing is left that could wake the loop.
        #expect(result.value == .finished)
        #expect(elapsed.value! < .seconds(5))
    }

    @Test func anUnknownModeFinishesAtOnceAndIsNotCreated() {
        let result = Box<Loop.RunResult>()
        let modes = Box<[Loop.Mode]>()
        let activities = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            CoreRunSupport.recordActivities(of: loop, in: .common, into: activities)
            result.value = loop.run(in: "never-named", for: .seconds(5))
            modes.value = loop.allModes
        }
        #expect(result.value == .finished)
        #expect(activities.all.isEmpty)
        #expect(modes.value == [.default])
    }

    @Test func runningTheCommonPseudoModeFinishesAtOnce() {
        let result = Box<Loop.RunResult>()
        let activities = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive(), to: .common)
            CoreRunSupport.recordActivities(of: loop, in: .common, into: activities)
            result.value = loop.run(in: .common, for: .seconds(5))
        }
        #expect(result.value == .finished)
        #expect(activities.all.isEmpty)
    }

    // MARK: Timed out

    @Test func timesOutAfterTheDuration() {
        let result = Box<Loop.RunResult>()
        let elapsed = Box<Duration>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let start = Loop.Instant.now
            result.value = loop.run(in: .default, for: .milliseconds(200))
            elapsed.value = CoreRunSupport.elapsed(since: start)
        }
        #expect(result.value == .timedOut)
        #expect(elapsed.value! >= .milliseconds(200))
        #expect(elapsed.value! < .milliseconds(200) + CoreRunSupport.slack)
    }

    @Test(arguments: [Duration.zero, .milliseconds(-5)])
    func aZeroOrNegativeDurationIsOnePassThatDoesNotSleep(duration: Duration) {
        let activities = Recorder<String>()
        let result = Box<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            CoreRunSupport.recordActivities(of: loop, into: activities)
            result.value = loop.run(in: .default, for: duration)
        }
        #expect(result.value == .timedOut)
        #expect(activities.all == ["entry", "beforeTimers", "beforeSources", "exit"])
    }

    @Test func aZeroDurationTimesOutEvenWhenTheModeBecameEmpty() {
        let results = Recorder<Loop.RunResult>()
        let ran = Counter()
        ItemsSupport.onLoopThread { loop in
            // The pending block is all the mode has; the pass runs it, leaving the mode empty.
            loop.perform { ran.increment() }
            results.append(loop.run(in: .default, for: .zero))
            // A source that invalidates itself when performed: also empty after the pass.
            let sourceForSelf = Box<LoopSource>()
            let selfInvalidating = LoopSource { _ in
                ran.increment()
                sourceForSelf.value?.invalidate()
            }
            try! loop.add(selfInvalidating)
            sourceForSelf.value = selfInvalidating
            selfInvalidating.signal()
            results.append(loop.run(in: .default, for: .zero))
            results.append(loop.run(in: .default, for: .zero))
        }
        #expect(ran.current == 2)
        #expect(results.all == [.timedOut, .timedOut, .finished])
    }

    // MARK: Handled source

    @Test func aSignalledSourceEndsARunThatReturnsAfterASourceIsHandled() {
        let results = Recorder<Loop.RunResult>()
        let performed = Counter()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let source = LoopSource { _ in performed.increment() }
            try! loop.add(source)
            source.signal()
            results.append(loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true))
            // Without returnAfterSourceHandled the same source does not end the run.
            source.signal()
            results.append(loop.run(in: .default, for: .milliseconds(100)))
        }
        #expect(results.all == [.handledSource, .timedOut])
        #expect(performed.current == 2)
    }

    @Test func aReadyDescriptorEndsARunThatReturnsAfterASourceIsHandled() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let result = Box<Loop.RunResult>()
        let handled = Counter()
        let source = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            pipe.drain()
            handled.increment()
        }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(source)
            pipe.write()
            result.value = loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true)
            source.invalidate()
        }
        #expect(result.value == .handledSource)
        #expect(handled.current == 1)
    }

    @Test func timersNeverCountAsHandledSources() throws {
        let result = Box<Loop.RunResult>()
        let fired = Counter()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(
                try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(20)) { _ in
                    fired.increment()
                })
            result.value = loop.run(in: .default, for: .milliseconds(300), returnAfterSourceHandled: true)
        }
        #expect(result.value == .timedOut)
        #expect(fired.current >= 2)
    }

    @Test func blocksNeverCountAsHandledSources() {
        let result = Box<Loop.RunResult>()
        let ran = Counter()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            loop.perform { ran.increment() }
            loop.perform { ran.increment() }
            result.value = loop.run(in: .default, for: .milliseconds(200), returnAfterSourceHandled: true)
        }
        #expect(result.value == .timedOut)
        #expect(ran.current == 2)
    }

    @Test func wakeUpsNeverCountAsHandledSources() {
        let result = Box<Loop.RunResult>()
        let afterWaiting = Counter()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(LoopObserver(activities: .afterWaiting) { _, _ in afterWaiting.increment() })
            result.value = loop.run(in: .default, for: .seconds(3), returnAfterSourceHandled: true)
        }
        #expect(waitUntil { loop.isWaiting })
        loop.wakeUp()
        #expect(waitUntil { afterWaiting.current >= 1 })
        thread.join()
        #expect(result.value == .timedOut)
        #expect(afterWaiting.current == 2)  // The wake-up, then the time limit.
    }

    // MARK: Finished by running out

    @Test func finishesWhenTheLastOneShotTimerHasFired() {
        let result = Box<Loop.RunResult>()
        let elapsed = Box<Duration>()
        let events = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            CoreRunSupport.recordActivities(of: loop, into: events, activities: [.entry, .exit])
            try! loop.add(try! LoopTimer(after: .milliseconds(20)) { _ in events.append("timer") })
            let start = Loop.Instant.now
            result.value = loop.run(in: .default, for: .seconds(10))
            elapsed.value = CoreRunSupport.elapsed(since: start)
        }
        #expect(result.value == .finished)
        #expect(events.all == ["entry", "timer", "exit"])
        #expect(elapsed.value! >= .milliseconds(20))
        #expect(elapsed.value! < CoreRunSupport.slack)
    }
}
