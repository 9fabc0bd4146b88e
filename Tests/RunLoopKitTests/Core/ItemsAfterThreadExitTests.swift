import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// Items of a loop whose thread exited are released by it, as CF's are: each can join another loop and works
/// there, and the dead loop object goes away with the items that belonged to it.
@Suite struct ItemsAfterThreadExitTests {
    @Test func itemsOfAnExitedThreadJoinAnotherLoopAndWorkThere() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let fired = Counter()
        let performed = Counter()
        let handled = Counter()
        let observed = Counter()
        let timer = try LoopTimer(after: .milliseconds(1), repeating: .milliseconds(5)) { _ in fired.increment() }
        let source = LoopSource { _ in performed.increment() }
        let descriptor = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            pipe.drain()
            handled.increment()
        }
        let observer = LoopObserver(activities: .beforeWaiting) { _, _ in observed.increment() }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(timer)
            try! loop.add(source, to: .common)
            try! loop.add(descriptor)
            try! loop.add(observer)
            loop.run(in: .default, for: .milliseconds(20))
        }
        // The first thread exited: its loop released the items. A signal now waits for the next loop.
        source.signal()
        let firedBefore = fired.current
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        try running.loop.add(timer)
        try running.loop.add(source)
        try running.loop.add(descriptor)
        try running.loop.add(observer)
        pipe.write()
        #expect(waitUntil { fired.current > firedBefore + 2 })
        #expect(waitUntil { performed.current == 1 })
        #expect(waitUntil { handled.current == 1 })
        #expect(observed.current > 0)
        for item in [timer.invalidate, source.invalidate, descriptor.invalidate, observer.invalidate] { item() }
    }

    /// A timer moved after its loop's thread exited keeps the new time (the move used to be dropped without a
    /// word) and fires at it on the loop it joins next.
    @Test func aTimerMovedAfterItsThreadExitedKeepsTheNewTime() throws {
        let fired = Counter()
        let timer = try LoopTimer(after: .seconds(3600)) { _ in fired.increment() }
        ItemsSupport.onLoopThread { loop in try! loop.add(timer) }
        let newTime = Loop.Instant.now + .milliseconds(20)
        timer.setNextFireTime(newTime)
        #expect(timer.nextFireTime == newTime)
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        try running.loop.add(timer)
        #expect(waitUntil { fired.current == 1 })
    }

    @Test func theDeadLoopGoesAwayWithTheItemsThatBelongedToIt() throws {
        weak var deadLoop: Loop?
        do {
            let timer = try LoopTimer(after: .seconds(3600)) { _ in }
            let loopBox = Box<Loop>()
            ItemsSupport.onLoopThread { loop in
                try! loop.add(timer)
                loopBox.value = loop
            }
            deadLoop = loopBox.value
            loopBox.value = nil
            #expect(deadLoop != nil)  // The timer still refers to it.
            let running = ItemsSupport.startRunningLoop()
            try running.loop.add(timer)  // Moves; the dead loop is kept until the timer goes.
            timer.invalidate()
            running.finish()
        }
        #expect(deadLoop == nil)
    }

    @Test func aSignalThatRacesTheTeardownLeavesNoCycleBehind() throws {
        // Issue 42: `signal()` from another thread passed the loop's "alive" check, then pushed the source onto the
        // signal stack after the exiting thread had emptied it. The stack retained the source and the source its
        // loop: both stayed alive for ever, with the loop's block segments and tables. The push below is that late
        // push, made deterministic; the stack is closed by the teardown, so it keeps nothing.
        weak var deadLoop: Loop?
        weak var deadSource: LoopSource?
        do {
            let performed = Counter()
            let source = LoopSource { _ in performed.increment() }
            let thread = try LoopThread(name: "late-signal")
            try thread.loop.add(source)
            thread.stop()  // The thread exits: its loop is torn down.
            deadLoop = thread.loop
            deadSource = source
            #expect(thread.loop.signalStack.push(source) == false)
            #expect(thread.loop.signalStack.isEmpty)
            #expect(performed.current == 0)
        }
        #expect(deadSource == nil)
        #expect(deadLoop == nil)
    }

    @Test func aSourceSignalledAfterItsLoopsThreadExitedIsPerformedWhereItGoesNext() throws {
        let performed = Counter()
        let source = LoopSource { _ in performed.increment() }
        let thread = try LoopThread(name: "signal-after-exit")
        try thread.loop.add(source)
        thread.stop()
        source.signal()  // Its owner is gone: the signal waits in the source.
        #expect(source.isSignalled)
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        try running.loop.add(source)
        #expect(waitUntil { performed.current == 1 })
        source.invalidate()
    }

    @Test func aClosedSignalStackRefusesPushesAndKeepsNothing() {
        let stack = SignalStack()
        let first = LoopSource { _ in }
        let second = LoopSource { _ in }
        #expect(stack.push(first))
        var closedWith: [ObjectIdentifier] = []
        stack.close { closedWith.append(ObjectIdentifier($0)) }
        #expect(closedWith == [ObjectIdentifier(first)])
        #expect(stack.isEmpty)
        weak var refused: LoopSource?
        do {
            let late = LoopSource { _ in }
            refused = late
            #expect(!stack.push(late))
        }
        #expect(refused == nil)  // Not retained by the refused push.
        var popped = 0
        stack.popAll { _ in popped += 1 }
        #expect(popped == 0)
        #expect(!stack.push(second))  // Closed for good: a pop does not reopen it.
    }

    @Test func anItemOfALiveLoopStillCannotJoinAnother() throws {
        let source = LoopSource { _ in }
        let first = ItemsSupport.startRunningLoop { loop in try! loop.add(source) }
        defer { first.finish() }
        let second = ItemsSupport.startRunningLoop()
        defer { second.finish() }
        #expect(throws: LoopError.self) { try second.loop.add(source) }
        source.invalidate()
    }
}
