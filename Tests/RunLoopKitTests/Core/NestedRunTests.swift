import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Runs started from inside a callout of a run in progress, in the same mode or another.
@Suite struct NestedRunTests {
    @Test func aNestedRunInAnotherModeFromATimerHasItsOwnEntryAndExit() {
        let events = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive(), to: "inner")
            CoreRunSupport.recordActivities(of: loop, into: events, prefix: "outer ", activities: [.entry, .exit])
            CoreRunSupport.recordActivities(
                of: loop, in: "inner", into: events, prefix: "inner ",
                activities: [.entry, .exit])
            loop.perform(in: "inner") { events.append("block in \(loop.currentMode?.name ?? "nil")") }
            try! loop.add(
                try! LoopTimer(after: .milliseconds(1)) { _ in
                    events.append("timer in \(loop.currentMode?.name ?? "nil")")
                    let inner = loop.run(in: "inner", for: .milliseconds(50))
                    events.append("inner returned \(inner) in \(loop.currentMode?.name ?? "nil")")
                })
            events.append("before run: \(loop.currentMode?.name ?? "nil")")
            let outer = loop.run(in: .default, for: .seconds(10))
            events.append("outer returned \(outer), mode \(loop.currentMode?.name ?? "nil")")
        }
        #expect(
            events.all == [
                "before run: nil",
                "outer entry",
                "timer in default",
                "inner entry",
                "block in inner",
                "inner exit",
                "inner returned timedOut in default",
                "outer exit",
                "outer returned finished, mode nil",
            ])
    }

    @Test func aNestedRunInTheSameModeFromABlockHasItsOwnEntryAndExit() {
        let events = Recorder<String>()
        let outer = Box<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            CoreRunSupport.recordActivities(of: loop, into: events, activities: [.entry, .exit])
            loop.perform {
                events.append("outer block")
                loop.perform { events.append("inner block in \(loop.currentMode?.name ?? "nil")") }
                let inner = loop.run(in: .default, for: .milliseconds(50))
                events.append("inner returned \(inner)")
                loop.stop()
            }
            outer.value = loop.run(in: .default, for: .seconds(10))
        }
        #expect(
            events.all == [
                "entry", "outer block", "entry", "inner block in default", "exit", "inner returned timedOut", "exit",
            ])
        #expect(outer.value == .stopped)
    }

    @Test func currentModeIsTheInnermostRunsAndIsSeenFromOtherThreads() {
        let seenOutside = Recorder<String>()
        let inInner = ItemsSupport.Flag()
        let leaveInner = ItemsSupport.Flag()
        let backInOuter = ItemsSupport.Flag()
        let leaveOuter = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive(), to: .common)
            loop.addCommonMode("inner")
            loop.perform {
                loop.perform(in: "inner") {
                    inInner.set()
                    _ = waitUntil { leaveInner.isSet }
                }
                loop.run(in: "inner", for: .milliseconds(1))
                backInOuter.set()
                _ = waitUntil { leaveOuter.isSet }
            }
            loop.run(in: .default, for: .seconds(10), returnAfterSourceHandled: false)
        }
        #expect(waitUntil { inInner.isSet })
        seenOutside.append(loop.currentMode?.name ?? "nil")
        leaveInner.set()
        #expect(waitUntil { backInOuter.isSet })
        seenOutside.append(loop.currentMode?.name ?? "nil")
        leaveOuter.set()
        loop.stop()
        thread.join()
        seenOutside.append(loop.currentMode?.name ?? "nil")
        #expect(seenOutside.all == ["inner", "default", "nil"])
    }

    @Test func anObserverWhoseHandlerRunsANestedRunIsNotCalledByIt() {
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let depth = Counter()
            let nesting = LoopObserver(activities: .beforeTimers, order: 0) { _, _ in
                calls.append("nesting")
                guard depth.increment() == 1 else { return }
                loop.run(in: .default, for: .zero)
            }
            let plain = LoopObserver(activities: .beforeTimers, order: 1) { _, _ in calls.append("plain") }
            try! loop.add(nesting)
            try! loop.add(plain)
            loop.run(in: .default, for: .zero)
        }
        // The nested pass called only the observer that was not firing; then the outer pass went on.
        #expect(calls.all == ["nesting", "plain", "plain"])
    }
}
