import RunLoopKit
import Synchronization
import Testing

/// How long blocks posted to a loop thread wait before they run: turn the histograms on, hand work over, read them.
@Suite struct HandOverLatencyExampleTests {
    @Test func blocksPostedWhileTheLoopIsBusyWaitForIt() throws {
        let worker = try LoopThread(name: "latency-example")
        defer { worker.stop() }
        worker.loop.enableHandOverLatencies()
        try worker.performAndWait {}  // The loop has switched them on.

        let posted = Atomic<Bool>(false)
        worker.loop.perform {  // Holds the loop for 60 ms once the next block is posted.
            while !posted.load(ordering: .acquiring) {}
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .milliseconds(60) {}
        }
        let ran = Atomic<Bool>(false)
        worker.loop.perform { ran.store(true, ordering: .releasing) }  // Waits for the busy block to end.
        posted.store(true, ordering: .releasing)
        while !ran.load(ordering: .acquiring) {}

        let blocks = try #require(worker.loop.handOverLatencies()).blocks
        #expect(blocks.count >= 3)
        #expect(blocks.p99 >= .milliseconds(50))
        print("blocks waited: p50 \(blocks.p50), p99 \(blocks.p99), max \(blocks.maximum)")
    }
}
