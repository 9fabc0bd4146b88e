import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// `Loop.description`: the full account on the loop's thread, a summary line elsewhere.
@Suite struct DescriptionTests {
    @Test func onTheLoopThreadItListsModesAndItems() {
        let text = Box<String>()
        let running = Box<String>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource(order: 7) { _ in }
            try! loop.add(source, to: "tracking")
            source.signal()
            try! loop.add(try! LoopTimer(after: .seconds(60), repeating: .seconds(60)) { _ in })
            // Not called by a zero-duration run, which never waits.
            try! loop.add(LoopObserver(activities: .beforeWaiting, repeats: false, order: 3) { _, _ in }, to: .common)
            loop.perform(in: "elsewhere") {}
            try! loop.schedule(after: .seconds(60)) {}
            loop.perform { running.value = loop.description }
            loop.run(in: .default, for: .zero)
            text.value = loop.description
            source.invalidate()
        }
        let description = text.value!
        #expect(description.hasPrefix("Loop(thread "))
        #expect(!description.contains("main"))
        #expect(description.contains("awake"))
        #expect(description.contains("common modes: default"))
        #expect(description.contains("mode default"))
        #expect(description.contains("mode tracking"))
        #expect(description.contains("source order 7, signalled"))
        #expect(description.contains("every"))
        #expect(description.contains("observer beforeWaiting order 3, once"))
        #expect(description.contains("blocks waiting: 1"))
        #expect(description.contains("one-shot callbacks scheduled: 1 (next at "))
        #expect(running.value!.contains("running default"))
        #expect(running.value!.contains("mode default (current)"))
    }

    @Test func fromAnotherThreadItIsASummaryLine() {
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(LoopSource { _ in }, to: "tracking")
            loop.run(in: .default, for: .seconds(10))
        }
        #expect(waitUntil { loop.isWaiting })
        let sleeping = loop.description
        loop.stop()
        thread.join()
        let exited = loop.description
        #expect(sleeping.hasPrefix("Loop(thread "))
        #expect(sleeping.contains("waiting"))
        #expect(sleeping.contains("running default"))
        #expect(!sleeping.contains("\n"))
        #expect(exited.contains("terminated"))
        #expect(Loop.main.description.contains("main"))
    }
}
