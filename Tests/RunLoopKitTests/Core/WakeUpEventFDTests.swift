import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// The loop's wake-up eventfd, written by other threads to end its sleep.
@Suite struct WakeUpEventFDTests {
    /// The woken loop never reads its eventfd (edge-triggered, each write is reported once), so the counter grows by
    /// one per wake-up. At its maximum a write is refused: the waker then empties it and writes again. Checked with
    /// the counter put one below its maximum: the first wake-up fills it, the second is refused at first and
    /// empties it.
    @Test func wakeUpsKeepWakingTheLoopWhenItsEventFDCounterIsFull() {
        let passes = Counter()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(LoopObserver(activities: .afterWaiting) { _, _ in passes.increment() })
            loop.run(in: .default, for: .seconds(30), returnAfterSourceHandled: false)
        }
        #expect(waitUntil { loop.isWaiting })
        let descriptor = loop.poller.wakeUpDescriptor
        var count: UInt64 = 0
        _ = read(descriptor, &count, 8)
        var almostFull: UInt64 = .max - 2  // The counter's maximum is .max - 1.
        #expect(write(descriptor, &almostFull, 8) == 8)
        // That write was reported too: one pass, then the loop sleeps again.
        #expect(waitUntil { passes.current == 1 && loop.isWaiting })
        for wakeUp in 2...4 {
            loop.wakeUp()
            #expect(waitUntil(timeout: CoreRunSupport.slack) { passes.current == wakeUp && loop.isWaiting })
        }
        // The second wake-up emptied it and wrote 1; the third wrote 1 more.
        #expect(read(descriptor, &count, 8) == 8 && count == 2, "counter \(count)")
        loop.stop()
        thread.join()
        #expect(passes.current == 5)  // The stop's wake-up is the fifth.
    }
}
