import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// What keeps a run going: items whose `keepsRunAlive` is false do not (libuv's `uv_unref`), and a loop whose
/// `keepsRunningWhenEmpty` is true keeps running, asleep, until stopped.
@Suite struct KeepAliveTests {
    @Test func aModeWithOnlyItemsThatDoNotKeepItAliveFinishesAtOnce() throws {
        let results = Recorder<Loop.RunResult>()
        let fired = Counter()
        let timer = try LoopTimer(after: .zero, repeating: .milliseconds(1)) { _ in fired.increment() }
        timer.keepsRunAlive = false  // Before it joins a loop: counted as asked once it does.
        let source = LoopSource { _ in }
        source.keepsRunAlive = false
        ItemsSupport.onLoopThread { loop in
            try! loop.add(timer)
            try! loop.add(source)
            results.append(loop.run(in: .default, for: .seconds(10)))
            timer.invalidate()
            source.invalidate()
        }
        #expect(results.all == [.finished])
        #expect(fired.current == 0)
    }

    @Test func itemsThatDoNotKeepARunAliveStillFireWhileSomethingElseDoes() throws {
        let fired = Counter()
        let results = Recorder<Loop.RunResult>()
        let statistics = try LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in
            fired.increment()
        }
        statistics.keepsRunAlive = false
        ItemsSupport.onLoopThread { loop in
            try! loop.add(statistics)
            let work = try! LoopTimer(after: .milliseconds(200)) { _ in }
            try! loop.add(work)
            // The one-shot timer keeps the run going; once it fired only the statistics timer is left.
            results.append(loop.run(in: .default, for: .seconds(10)))
            statistics.invalidate()
        }
        #expect(results.all == [.finished])
        #expect(fired.current >= 5)
    }

    @Test func turningKeepAliveOffFromAnotherThreadEndsASleepingRun() {
        let result = Box<Loop.RunResult>()
        let source = LoopSource { _ in }
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(source)
            result.value = loop.run(in: .default, for: .seconds(20))
        }
        #expect(waitUntil { loop.isWaiting })
        source.keepsRunAlive = false
        thread.join()
        #expect(result.value == .finished)
        #expect(source.isValid)
    }

    @Test func anItemInSeveralModesStopsKeepingEachOfThemAlive() {
        let results = Recorder<Loop.RunResult>()
        let source = LoopSource { _ in }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(source, to: .default)
            try! loop.add(source, to: "tracking")
            results.append(loop.run(in: "tracking", for: .zero))
            source.keepsRunAlive = false
            results.append(loop.run(in: "tracking", for: .seconds(10)))
            results.append(loop.run(in: .default, for: .seconds(10)))
            source.keepsRunAlive = true
            results.append(loop.run(in: .default, for: .zero))
            source.invalidate()
        }
        #expect(results.all == [.timedOut, .finished, .finished, .timedOut])
    }

    @Test func aLoopThatKeepsRunningWhenEmptySleepsUntilStopped() {
        let result = Box<Loop.RunResult>()
        let ran = Counter()
        let (loop, thread) = startLoopThread { loop in
            loop.keepsRunningWhenEmpty = true
            result.value = loop.run(in: .default, for: .seconds(20))
        }
        // Nothing is registered: the run sleeps (no spinning) and serves blocks sent to it.
        #expect(waitUntil { loop.isWaiting })
        loop.perform { ran.increment() }
        #expect(waitUntil { ran.current == 1 })
        #expect(waitUntil { loop.isWaiting })
        loop.stop()
        thread.join()
        #expect(result.value == .stopped)
    }

    @Test func turningRunningWhenEmptyOffEndsASleepingEmptyRun() {
        let result = Box<Loop.RunResult>()
        let (loop, thread) = startLoopThread { loop in
            loop.keepsRunningWhenEmpty = true
            result.value = loop.run(in: .default, for: .seconds(20))
        }
        #expect(waitUntil { loop.isWaiting })
        loop.keepsRunningWhenEmpty = false
        thread.join()
        #expect(result.value == .finished)
    }
}
