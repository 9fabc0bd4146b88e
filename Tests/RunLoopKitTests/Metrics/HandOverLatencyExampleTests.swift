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

        let started = Atomic<Bool>(false)
        worker.loop.perform {  // Holds the loop for 60 ms.
            started.store(true, ordering: .releasing)
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .milliseconds(60) {}
        }
        while !started.load(ordering: .acquiring) {}
        try worker.performAndWait {}  // Posted now: waits for the busy block to end.

        let blocks = try #require(worker.loop.handOverLatencies()).blocks
        #expect(blocks.count >= 3)
        #expect(blocks.p99 >= .milliseconds(50))
        print("blocks waited: p50 \(blocks.p50), p99 \(blocks.p99), max \(blocks.maximum)")
    }
}
