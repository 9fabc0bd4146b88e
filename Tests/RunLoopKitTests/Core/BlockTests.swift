import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// `perform(in:_:)`: blocks queued from any thread, run once on the loop's thread in a matching mode.
@Suite struct BlockTests {
    @Test func blocksFromTheLoopThreadRunInOrderOnThatThread() {
        let ran = Recorder<Int>()
        let onLoopThread = Recorder<Bool>()
        let accepted = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            for index in 0..<5 {
                accepted.append(
                    loop.perform {
                        ran.append(index)
                        onLoopThread.append(Loop.current === loop)
                    })
            }
            loop.run(in: .default, for: .zero)
        }
        #expect(accepted.all == [true, true, true, true, true])
        #expect(ran.all == [0, 1, 2, 3, 4])
        #expect(onLoopThread.all == [true, true, true, true, true])
    }

    /// `perform(_:)` without a mode is `perform(in: .default, _:)`: its blocks wait through a pass of another mode,
    /// and run, in order with blocks queued with the mode named, in the default mode.
    @Test func performWithoutAModeQueuesForTheDefaultMode() {
        let ran = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            #expect(loop.perform { ran.append("bare") })
            #expect(loop.perform(in: .default) { ran.append("named") })
            #expect(loop.perform(in: "elsewhere") { ran.append("elsewhere") })
            loop.run(in: "elsewhere", for: .zero)
            #expect(ran.all == ["elsewhere"])
            loop.run(in: .default, for: .zero)
        }
        #expect(ran.all == ["elsewhere", "bare", "named"])
    }

    /// Another thread's item change is applied where it was posted among that thread's blocks: a block the change
    /// queues (here from a source's schedule handler) runs after the blocks posted before the change, and before
    /// those posted after it, even when all of them reach the loop in one batch.
    @Test func aBlockQueuedByAChangeRunsWhereTheChangeWasPosted() throws {
        let thread = try LoopThread(name: "change-order")
        defer { thread.stop() }
        let ran = Recorder<String>()
        let held = Counter()
        let released = Counter()
        // Holds the worker inside a block, so that everything posted below reaches it in one batch.
        thread.perform {
            held.increment()
            while released.current == 0 { usleep(100) }
        }
        #expect(waitUntil { held.current == 1 })
        thread.perform { ran.append("before") }
        let source = LoopSource(schedule: { loop, _ in loop.perform { ran.append("scheduled") } }, perform: { _ in })
        try thread.loop.add(source, to: .default)
        thread.perform { ran.append("after") }
        released.increment()
        #expect(waitUntil { ran.count == 3 })
        #expect(ran.all == ["before", "scheduled", "after"])
        source.invalidate()
    }

    @Test func blocksFromOtherThreadsRunInOrderPerProducer() {
        let producers = 3
        let perProducer = 500
        let ran = Recorder<[Int]>()
        let onLoopThread = Counter()
        let running = ItemsSupport.startRunningLoop()
        let loop = running.loop
        let threads = (0..<producers).map { producer in
            TestThread {
                for index in 0..<perProducer {
                    loop.perform {
                        if Loop.current === loop { onLoopThread.increment() }
                        ran.append([producer, index])
                    }
                }
            }
        }
        threads.forEach { $0.join() }
        #expect(waitUntil { ran.count == producers * perProducer })
        running.finish()
        #expect(onLoopThread.current == producers * perProducer)
        let all = ran.all
        for producer in 0..<producers {
            let indices = all.filter { $0[0] == producer }.map { $0[1] }
            #expect(indices == Array(0..<perProducer))
        }
    }

    @Test func aBlockFromAnotherThreadWakesASleepingLoop() {
        let ranAt = Box<Loop.Instant>()
        let result = Box<Loop.RunResult>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            result.value = loop.run(in: .default, for: .seconds(10))
        }
        #expect(waitUntil { loop.isWaiting })
        let sentAt = Loop.Instant.now
        #expect(
            loop.perform {
                ranAt.value = .now
                loop.stop()
            })
        thread.join()
        #expect(result.value == .stopped)
        #expect(ranAt.value! - sentAt < CoreRunSupport.slack)
    }

    @Test func aBlockForAnotherModeWaitsForThatMode() {
        let events = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive(), to: .common)
            try! loop.add(ItemsSupport.keepAlive(), to: "other")
            loop.perform(in: "other") { events.append("other block in \(loop.currentMode?.name ?? "nil")") }
            loop.perform { events.append("default block") }
            events.append("default \(loop.run(in: .default, for: .milliseconds(50)))")
            events.append("default \(loop.run(in: .default, for: .zero))")
            loop.run(in: "other", for: .zero)
            events.append("other \(loop.run(in: "other", for: .zero))")
        }
        #expect(
            events.all == [
                "default block", "default timedOut", "default timedOut", "other block in other", "other timedOut",
            ])
    }

    @Test func aBlockForSeveralModesRunsOnceInTheFirstOfThemToRun() {
        let ran = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive(), to: "a")
            try! loop.add(ItemsSupport.keepAlive(), to: "b")
            loop.perform(in: ["a", "b"]) { ran.append(loop.currentMode?.name ?? "nil") }
            loop.run(in: "b", for: .zero)
            loop.run(in: "a", for: .zero)
        }
        #expect(ran.all == ["b"])
    }

    /// A block for an empty list of modes could never run: it is refused at once instead of kept forever.
    @Test func aBlockForNoModeIsRefusedAndReleased() {
        let answers = Recorder<Bool>()
        let released = ReleaseProbe()
        ItemsSupport.onLoopThread { loop in
            // Only the block holds the token: it is released once the loop lets go of the block.
            answers.append(loop.perform(in: []) { [token = released.token()] in _ = token })
            answers.append(released.isReleased)
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .zero)
        }
        #expect(answers.all == [false, true])
    }

    @Test func aPendingBlockKeepsAModeFromBeingEmpty() {
        let results = Recorder<String>()
        let elapsed = Box<Duration>()
        ItemsSupport.onLoopThread { loop in
            // Default mode with nothing but a block.
            loop.perform { results.append("block") }
            let start = Loop.Instant.now
            results.append("\(loop.run(in: .default, for: .seconds(5)))")
            elapsed.value = CoreRunSupport.elapsed(since: start)
            results.append("\(loop.run(in: .default, for: .seconds(5)))")
        }
        // The block runs, then the mode is empty: the run finishes instead of sleeping until its time limit.
        #expect(results.all == ["block", "finished", "finished"])
        #expect(elapsed.value! < CoreRunSupport.slack)
    }

    @Test func aPendingBlockKeepsAModeNamedOnlyByTheBlockFromBeingEmpty() {
        let results = Recorder<String>()
        let fromAnotherThread = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            loop.perform(in: "fresh") { results.append("fresh block") }
            results.append("\(loop.run(in: "fresh", for: .seconds(5)))")
            _ = waitUntil { fromAnotherThread.isSet }
            results.append("\(loop.run(in: "other fresh", for: .seconds(5)))")
        }
        loop.perform(in: ["other fresh"]) { results.append("other fresh block") }
        fromAnotherThread.set()
        thread.join()
        #expect(results.all == ["fresh block", "finished", "other fresh block", "finished"])
    }
}

/// Tells whether the token it handed out was released (the closure holding it was dropped).
final class ReleaseProbe: Sendable {
    private let released = Counter()

    final class Token: Sendable {
        let released: Counter
        init(_ released: Counter) { self.released = released }
        deinit { released.increment() }
    }

    func token() -> Token { Token(released) }

    var isReleased: Bool { released.current == 1 }
}
