import RunLoopKit
import Synchronization

/// Heavy work spread over passes ("one image per pass"): 20 heavy tasks spread over passes, 2 per pass, with a timer
/// firing between batches, so the loop keeps answering while the work drains.
enum BatchScenario {
    static func run() {
        let loop = Loop.current
        let passes = Atomic<Int>(0)
        let observer = LoopObserver(activities: .beforeWaiting, order: 0) { _, _ in
            passes.add(1, ordering: .relaxed)
        }
        try! loop.add(observer)
        let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 2)
        let timer = try! LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in
            Trace.line("main", "  timer fired between batches (\(queue.pendingCount) tasks left)")
        }
        try! loop.add(timer)
        for index in 1...20 {
            queue.enqueue {
                busyWait(.milliseconds(2))  // Stands in for decoding one image.
                Trace.line("main", "task \(index) (pass \(passes.load(ordering: .relaxed)))")
                if index == 20 { timer.invalidate() }
            }
        }
        Trace.line("main", "queued 20 tasks of 2 ms, 2 per pass; timer every 5 ms")
        let result = loop.run(in: .default, for: .seconds(5))
        Trace.line(
            "main",
            "run returned \(result) after \(passes.load(ordering: .relaxed)) passes: the queue "
                + "drained and nothing else was left in the mode")
        observer.invalidate()
        queue.invalidate()
    }
}
