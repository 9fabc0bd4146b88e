import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// `run()` without arguments: runs the default mode until stopped or until the mode has nothing left.
///
/// Each run is guarded by a watchdog that stops the loop after 20 s, so a failure shows as an expectation
/// instead of a hang.
@Suite struct RunUntilDoneTests {
    @Test func returnsWhenStoppedFromAnotherThread() {
        let watchdogFired = Box<Bool>()
        let returned = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let watchdog = CoreRunSupport.Watchdog(stopping: loop)
            loop.run()
            returned.set()
            watchdogFired.value = watchdog.finish()
        }
        #expect(waitUntil { loop.isWaiting })
        let start = Loop.Instant.now
        loop.stop()
        #expect(waitUntil { returned.isSet })
        let elapsed = CoreRunSupport.elapsed(since: start)
        thread.join()
        #expect(watchdogFired.value == false)
        #expect(elapsed < CoreRunSupport.slack)
    }

    @Test func returnsWhenTheDefaultModeRunsOutOfItems() {
        let watchdogFired = Box<Bool>()
        let fired = Counter()
        let sourceBox = Box<LoopSource>()
        let (loop, thread) = startLoopThread { loop in
            // A one-shot timer, then a source invalidated from another thread: each is at some point the last item.
            try! loop.add(try! LoopTimer(after: .milliseconds(20)) { _ in fired.increment() })
            let watchdog = CoreRunSupport.Watchdog(stopping: loop)
            loop.run()
            let source = LoopSource { _ in }
            try! loop.add(source)
            sourceBox.value = source
            loop.run()
            watchdogFired.value = watchdog.finish()
        }
        #expect(waitUntil { sourceBox.value != nil && loop.isWaiting })
        sourceBox.value!.invalidate()
        thread.join()
        #expect(fired.current == 1)
        #expect(watchdogFired.value == false)
    }

    @Test func anEmptyDefaultModeReturnsAtOnce() {
        let watchdogFired = Box<Bool>()
        let activities = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            CoreRunSupport.recordActivities(of: loop, into: activities)
            let watchdog = CoreRunSupport.Watchdog(stopping: loop)
            loop.run()
            watchdogFired.value = watchdog.finish()
        }
        #expect(watchdogFired.value == false)
        #expect(activities.all.isEmpty)
    }
}
