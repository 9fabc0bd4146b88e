import Dispatch
import Glibc
import RunLoopKit
import RunLoopKitSystem

/// A hand-written `poll()` host on the main thread that serves Dispatch's main queue itself, as CF's run loop does:
/// it waits on `Loop.main.pollDescriptor` and on libdispatch's main-queue eventfd, reads that eventfd and drains the
/// queue when it is readable, and calls `runPass()` as Docs/Embedding.md says. 50 blocks from another thread each run
/// exactly once, on the main thread; the loop, finding the eventfd already read by the host, drains no empty queue
/// behind it. (A block posted between the host's `poll` and its `runPass` is the loop's to serve: a rare race, so the
/// loop's drains must stay under a fifth of the blocks, where before every block cost the loop an empty drain.)
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
