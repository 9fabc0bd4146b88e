import Dispatch
import Glibc
import RunLoopKit
import RunLoopKitSystem

/// A hand-written `poll()` host on the main thread that serves Dispatch's main queue itself, as CF's run loop does:
/// it waits on `Loop.main.pollDescriptor` and on libdispatch's main-queue eventfd, reads that eventfd and drains the
/// queue when it is readable, and calls `runPass()` as Docs/Embedding.md says. 50 blocks from another thread each run
/// exactly once, on the main thread. The host reads the eventfd before its pass, and epoll re-checks readiness when it
/// reports, so the loop's pass finds nothing to drain: such a host needs nothing more. (A block posted between the
/// host's `poll` and its `runPass` is the loop's to serve, a rare race: the loop's drains stay under a fifth.)
func hostServesMainQueueScenario() {
    let rounds = 50
    let ran = Shared(0)
    let offMain = Shared(0)
    let queueDescriptor = DispatchMainQueue.wakeUpDescriptor()
    DispatchQueue.global().async {
        for round in 0..<rounds {
            DispatchQueue.main.async {
                if !onMainThread { offMain.withLock { $0 += 1 } }
                ran.withLock { $0 += 1 }
            }
            let deadline = nowNanoseconds() + 10_000_000_000
            while ran.value == round {
                if nowNanoseconds() > deadline { fail("block \(round) did not run within 10 s") }
                usleep(50)
            }
        }
    }
    let before = Loop.main.metrics.handled.mainQueueDrains
    var entries = [
        pollfd(fd: Loop.main.pollDescriptor, events: Int16(POLLIN), revents: 0),
        pollfd(fd: queueDescriptor, events: Int16(POLLIN), revents: 0),
    ]
    let deadline = nowNanoseconds() + 30_000_000_000
    while ran.value < rounds && nowNanoseconds() < deadline {
        _ = poll(&entries, 2, 1_000)
        if entries[1].revents & Int16(POLLIN) != 0 {
            var count: UInt64 = 0
            _ = read(queueDescriptor, &count, 8)
            DispatchMainQueue.drain()
        }
        while Loop.main.runPass() {}
    }
    let loopDrains = Loop.main.metrics.handled.mainQueueDrains - before
    check(ran.value == rounds, "\(ran.value) of \(rounds) blocks ran")
    check(offMain.value == 0, "\(offMain.value) blocks ran off the main thread")
    check(loopDrains < rounds / 5, "the loop drained the main queue \(loopDrains) times behind the host")
    pass("blocks=\(rounds) loop_drains=\(loopDrains)")
}

/// Main-queue work reported to the loop but drained by someone else before the loop's pass reaches it (here a timer
/// handler of the same pass, as a nested run of CF's would): the loop finds libdispatch's eventfd already read and
/// does not drain again, so the pass counts no drain and no handled source for it.
func drainedBehindTheLoopScenario() {
    let queueDescriptor = DispatchMainQueue.wakeUpDescriptor()
    let ran = Shared(0)
    DispatchQueue.main.async { ran.withLock { $0 += 1 } }  // Queued before the run: reported by its first wait.
    let drainer = try! LoopTimer(after: .zero) { _ in
        var count: UInt64 = 0
        _ = read(queueDescriptor, &count, 8)
        DispatchMainQueue.drain()
    }
    try! Loop.main.add(drainer)
    let before = Loop.main.metrics.handled.mainQueueDrains
    Loop.main.run(in: .default, for: .milliseconds(50))
    let loopDrains = Loop.main.metrics.handled.mainQueueDrains - before
    check(ran.value == 1, "the block ran \(ran.value) times")
    check(loopDrains == 0, "the loop drained a queue already drained behind it (\(loopDrains) drains)")
    pass("loop_drains=\(loopDrains)")
}
