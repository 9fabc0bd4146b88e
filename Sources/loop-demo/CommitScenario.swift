import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Batched commits before sleep, as Core Animation and Texture do them: many updates marked in a pass are committed
/// once, just before the loop sleeps, after the app's own beforeWaiting observers; marks from another thread hop to the
/// loop.
enum CommitScenario {
    static func run() {
        let loop = Loop.current
        let committer = try! CommitBeforeSleep<String>(loop: loop) { updates in
            let first = updates.first ?? ""
            let last = updates.last ?? ""
            Trace.line(
                "main",
                "commit: \(updates.count) updates in one transaction (\(first) ... \(last)), "
                    + "main thread: \(Loop.current.isMain)")
        }
        let appObserver = LoopObserver(activities: .beforeWaiting, order: 0) { _, _ in
            Trace.line("main", "beforeWaiting: app observer (order 0) runs first")
        }
        try! loop.add(appObserver)

        let rounds = Atomic<Int>(0)
        let source = LoopSource { _ in
            let round = rounds.add(1, ordering: .relaxed).newValue
            Trace.line("main", "source: event \(round) marks 500 layers as changed")
            for layer in 1...500 { committer.mark("layer \(layer) of event \(round)") }
        }
        try! loop.add(source)

        let helper = JoinableThread {
            source.signal()
            waitFor { rounds.load(ordering: .relaxed) == 1 && loop.isWaiting }
            source.signal()
            waitFor { rounds.load(ordering: .relaxed) == 2 && loop.isWaiting }
            Trace.line("helper", "marks 3 updates from another thread")
            for index in 1...3 { committer.mark("update \(index) from the helper thread") }
            waitFor { committer.pendingCount == 0 && loop.isWaiting }
            loop.stop()
        }
        let result = loop.run(in: .default, for: .seconds(5))
        helper.join()
        Trace.line("main", "run returned \(result)")
        source.invalidate()
        appObserver.invalidate()
        committer.invalidate()
    }

    /// Polls `condition` every 100 µs, for at most 2 seconds.
    static func waitFor(_ condition: () -> Bool) {
        let deadline = Loop.Instant.now + .seconds(2)
        while !condition() && Loop.Instant.now < deadline { usleep(100) }
    }
}
