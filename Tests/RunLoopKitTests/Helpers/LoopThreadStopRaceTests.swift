import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Every block a LoopThread (or its loop) accepted runs exactly once, and every one it did not accept was reported
/// as such: 4 threads post through `LoopThread.perform` and straight through `loop.perform` while `stop()` races
/// them, 40 times.
@Suite struct LoopThreadStopRaceTests {
    @Test func blocksPostedWhileStopRacesAreEachRunExactlyOnceOrRefused() throws {
        var totalAccepted = 0
        var totalRefused = 0
        for _ in 0..<40 {
            let thread = try LoopThread(name: "stop-race")
            let accepted = Atomic<Int>(0)
            let refused = Atomic<Int>(0)
            let ran = Atomic<Int>(0)
            let started = Atomic<Int>(0)
            let producers = (0..<4).map { index in
                TestThread {
                    started.add(1, ordering: .relaxed)
                    var posts = 0
                    while true {
                        posts += 1
                        if posts.isMultiple(of: 64) { usleep(50) }  // A steady stream, not a flood the stop waits on.
                        let body: @Sendable () -> Void = { ran.add(1, ordering: .relaxed) }
                        let taken: Bool
                        if index.isMultiple(of: 2) {
                            taken = thread.perform(body)
                        } else {
                            taken = thread.loop.perform(body)
                        }
                        guard taken else {
                            refused.add(1, ordering: .relaxed)
                            return
                        }
                        accepted.add(1, ordering: .relaxed)
                    }
                }
            }
            _ = waitUntil { started.load(ordering: .relaxed) == 4 && accepted.load(ordering: .relaxed) > 100 }
            thread.stop()  // Returns once the thread exited: everything accepted has run by then.
            for producer in producers { producer.join() }
            #expect(ran.load(ordering: .relaxed) == accepted.load(ordering: .relaxed))
            #expect(refused.load(ordering: .relaxed) == 4)
            totalAccepted += accepted.load(ordering: .relaxed)
            totalRefused += refused.load(ordering: .relaxed)
        }
        Reliability.report(
            "stop race: 40 LoopThreads, \(totalAccepted) blocks accepted and run, \(totalRefused) refused")
    }
}
