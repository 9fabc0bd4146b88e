import Foundation
import RunLoopKit
import Synchronization
import Testing

/// The README's "Signal another thread's loop" example, line for line (keep the two in step), with its outcome
/// checked: each signal is performed on the worker, and invalidating the source ends the worker's thread.
@Suite struct ReadmeExampleTests {
    @Test func theReadmeExampleSignalsTheWorkerAndLetsItExit() {
        let performed = Atomic<Int>(0)
        let onWorker = Atomic<Int>(0)
        let exited = Atomic<Bool>(false)
        let source = LoopSource {
            // Runs on the worker's thread, once per signalled state (signals coalesce).
            let count = performed.add(1, ordering: .relaxed).newValue
            if !Thread.isMainThread { onWorker.add(1, ordering: .relaxed) }
            _ = count  // The README prints it.
        }
        let worker = Thread {
            let loop = Loop.current  // the worker's loop, created on first use
            try! loop.add(source)  // schedule it in the default mode
            while source.isValid {  // sleeps in epoll_wait between signals
                loop.run(in: .default, for: .seconds(1))
            }
            exited.store(true, ordering: .releasing)
        }
        worker.start()
        for _ in 1...3 {
            source.signal()  // mark it AND wake the worker's loop: one call
            Thread.sleep(forTimeInterval: 0.1)
        }
        source.invalidate()  // the worker's run returns; the thread exits
        #expect(waitUntil { exited.load(ordering: .acquiring) })
        // Three signals 100 ms apart: three performs, unless the worker had not added the source before the first
        // signal (then the first signals coalesce into one perform when it is added).
        #expect((1...3).contains(performed.load(ordering: .relaxed)))
        #expect(onWorker.load(ordering: .relaxed) == performed.load(ordering: .relaxed))
    }
}
