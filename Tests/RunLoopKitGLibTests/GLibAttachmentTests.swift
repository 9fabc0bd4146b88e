import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKitGLib

/// GLib owns the thread: `g_main_loop_run` on a context of the thread's own, with the thread's loop attached. Every
/// kind of RunLoopKit work reaches its handler inside GLib's iterations, woken by the loop's descriptor alone.
@Suite(.enabled(if: GLibTesting.isAvailable, "GLib is not installed"), .timeLimit(.minutes(2)))
struct GLibAttachmentTests {
    @Test func aSignalFromAnotherThreadIsServedFromGLibsFirstIteration() {
        // No pass of the loop runs before g_main_loop_run: the attachment's first iteration must serve the signal
        // even though nothing has made the loop's descriptor readable yet.
        let performed = Counter()
        let source = LoopSource { _ in performed.increment() }
        let host = GLibHostThread { loop, _ in try! loop.add(source) }
        source.signal()
        #expect(waitUntil { performed.current == 1 })
        #expect(waitUntil { host.loop.isWaiting })
        source.signal()  // Now through the descriptor: the loop counts as asleep between passes.
        #expect(waitUntil { performed.current == 2 })
        host.stop()
        source.invalidate()
    }

    @Test func signalsBlocksTimersAndDescriptorsReachTheirHandlersInsideGLib() throws {
        let events = Recorder<String>()
        let pipe = Pipe()
        defer { pipe.close() }
        let inGLib = Atomic<Int>(0)
        let source = LoopSource { _ in events.append("signal") }
        let timer = try LoopTimer(after: .milliseconds(30)) { _ in events.append("timer") }
        let descriptor = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            pipe.drain()
            events.append("descriptor")
        }
        // Each handler runs inside a GLib dispatch: the attachment's dispatch is on the stack, so a pass is running.
        let observer = LoopObserver(activities: .entry) { _, _ in inGLib.add(1, ordering: .relaxed) }
        let host = GLibHostThread { loop, _ in
            try! loop.add(source)
            try! loop.add(timer)
            try! loop.add(descriptor)
            try! loop.add(observer)
        }
        #expect(waitUntil { events.all.contains("timer") })
        #expect(waitUntil { host.loop.isWaiting })
        source.signal()
        #expect(waitUntil { events.all.contains("signal") })
        #expect(waitUntil { host.loop.isWaiting })
        host.loop.perform { events.append("block") }
        #expect(waitUntil { events.all.contains("block") })
        #expect(waitUntil { host.loop.isWaiting })
        pipe.write()
        #expect(waitUntil { events.all.contains("descriptor") })
        #expect(Set(events.all) == ["timer", "signal", "block", "descriptor"])
        #expect(inGLib.load(ordering: .relaxed) >= 4, "every handler ran in a pass GLib dispatched")
        host.stop()
        for item in [source, timer, descriptor, observer] as [LoopItem] { item.invalidateItem() }
    }

    @Test func aRunOfTheLoopFromAGLibCallbackDoesNotLoseLaterWakeUps() throws {
        // A GLib callback (not the attachment's) runs the loop for a while: afterwards the loop no longer counts as
        // asleep, so other threads' work would not make its descriptor readable. The next iteration runs a pass.
        let performed = Counter()
        let ranNested = ItemsSupport.Flag()
        let source = LoopSource { _ in performed.increment() }
        let host = GLibHostThread { loop, context in
            try! loop.add(source)
            GLibTesting.calls!.addTimeout(context, milliseconds: 10) {
                Loop.current.run(in: .default, for: .milliseconds(5))
                ranNested.set()
                return false
            }
        }
        #expect(waitUntil { ranNested.isSet })
        #expect(waitUntil { host.loop.isWaiting })
        source.signal()
        #expect(waitUntil(timeout: .seconds(5)) { performed.current == 1 })
        host.stop()
        source.invalidate()
    }

    @Test func aHandlerThatRunsANestedGLibMainLoopKeepsTheLoopRunningInsideIt() throws {
        // A modal dialog in GTK runs a nested GLib main loop from inside a handler: the loop's timers and sources
        // keep running in it, as in a nested run of the loop.
        let timerFired = ItemsSupport.Flag()
        let nestedEnded = Box<String>()
        let context = Box<SharedContext>()
        let opener = LoopSource { _ in
            let glib = GLibTesting.calls!
            let nested = SharedContext(glib.newMainLoop(context.value!.pointer))
            let timer = try! LoopTimer(after: .milliseconds(20)) { _ in
                timerFired.set()
                glib.quit(nested.pointer)
            }
            try! Loop.current.add(timer)
            glib.addTimeout(context.value!.pointer, milliseconds: 5_000) {  // Should the loop stall in it.
                glib.quit(nested.pointer)
                return false
            }
            glib.run(nested.pointer)
            nestedEnded.value = timerFired.isSet ? "by the loop's timer" : "by the 5 s fallback"
            glib.unref(mainLoop: nested.pointer)
        }
        let host = GLibHostThread { loop, pointer in
            context.value = SharedContext(pointer)
            try! loop.add(opener)
        }
        opener.signal()
        #expect(waitUntil { nestedEnded.value != nil })
        #expect(nestedEnded.value == "by the loop's timer")
        host.stop()
        opener.invalidate()
    }

    /// A handler that runs the loop for a while (a modal wait of RunLoopKit's own) must not freeze GLib: its
    /// timeouts (GTK's drawing, in an app) keep firing for the whole nested run, and the loop still serves GLib's
    /// passes afterwards.
    @Test(arguments: ["in a handler of the loop", "in a GLib callback"])
    func aNestedRunOfTheLoopKeepsGLibIterating(startedFrom place: String) throws {
        let ticks = Counter()
        let ticksDuringNested = Box<Int>()
        let loopTicksDuringNested = Box<Int>()
        let loopTicks = Counter()
        let timer = try LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in loopTicks.increment() }
        let nestedRun: @Sendable () -> Void = {
            let before = (ticks.current, loopTicks.current)
            Loop.current.run(in: .default, for: .milliseconds(200))
            ticksDuringNested.value = ticks.current - before.0
            loopTicksDuringNested.value = loopTicks.current - before.1
        }
        let opener = LoopSource { _ in nestedRun() }
        let host = GLibHostThread { loop, context in
            try! loop.add(opener)
            try! loop.add(timer)
            GLibTesting.calls!.addTimeout(context, milliseconds: 5) {
                ticks.increment()
                return true
            }
        }
        if place == "in a GLib callback" {
            host.glib.invoke(host.context) { nestedRun() }
        } else {
            opener.signal()
        }
        #expect(waitUntil { ticksDuringNested.value != nil })
        #expect(
            (ticksDuringNested.value ?? 0) >= 5,
            "GLib's 5 ms timeout fired \(ticksDuringNested.value ?? 0) times during the loop's 200 ms nested run")
        #expect((loopTicksDuringNested.value ?? 0) >= 5, "the loop's own timer ran in its nested run")
        // Afterwards GLib runs the loop again, through the attachment alone.
        let performed = Counter()
        let source = LoopSource { _ in performed.increment() }
        try host.loop.add(source)
        #expect(waitUntil { host.loop.isWaiting })
        source.signal()
        #expect(waitUntil { performed.current == 1 })
        let glibTicks = ticks.current
        #expect(waitUntil { ticks.current > glibTicks + 3 }, "GLib's own iterations go on after the nested run")
        host.stop()
        for item in [opener, timer, source] as [LoopItem] { item.invalidateItem() }
    }

    /// Invalidating the attachment inside a nested run ends the run's GLib iteration with it: GLib's timeouts stop
    /// firing there, and the run itself goes on.
    @Test func invalidatingTheAttachmentInANestedRunEndsItsGLibIteration() throws {
        let ticks = Counter()
        let attachment = Box<GLibAttachment>()
        let atInvalidation = Box<Int>()
        let afterInvalidation = Box<Int>()
        let opener = LoopSource { _ in
            let loop = Loop.current
            let invalidator = try! LoopTimer(after: .milliseconds(100)) { _ in
                attachment.value!.invalidate()
                atInvalidation.value = ticks.current
            }
            try! loop.add(invalidator)
            loop.run(in: .default, for: .milliseconds(200))
            afterInvalidation.value = ticks.current - (atInvalidation.value ?? 0)
        }
        let host = GLibHostThread { loop, context in
            try! loop.add(opener)
            GLibTesting.calls!.addTimeout(context, milliseconds: 5) {
                ticks.increment()
                return true
            }
        }
        attachment.value = host.attachment
        opener.signal()
        #expect(waitUntil { afterInvalidation.value != nil })
        #expect((atInvalidation.value ?? 0) >= 5, "GLib iterated in the nested run until invalidate()")
        #expect(afterInvalidation.value == 0, "GLib's timeout fired \(afterInvalidation.value ?? -1) times after it")
        host.stop()
        opener.invalidate()
    }

    @Test func aDescriptorWatchedByGLibAndByTheLoopReachesBoth() throws {
        try GLibTesting.expectADescriptorWatchedByBothReachesBoth { setUp in
            let thread = GLibHostThread(setUp: setUp)
            return (thread.loop, thread.stop)
        }
    }

    @Test func anIdleAttachedLoopCostsGLibNothing() {
        let passes = Counter()
        let observer = LoopObserver(activities: .entry) { _, _ in passes.increment() }
        let host = GLibHostThread { loop, _ in try! loop.add(observer) }
        #expect(waitUntil { host.loop.isWaiting })
        let cpuBefore = host.onThread { threadCPUNanoseconds() }
        let passesBefore = passes.current
        usleep(1_000_000)  // The measured idle second, not a wait for something to happen.
        let passesDuring = passes.current - passesBefore
        let cpu = host.onThread { threadCPUNanoseconds() } - cpuBefore
        TestFigures.report("[glib] attached, idle second: \(passesDuring) passes, \(Double(cpu) / 1e6) ms CPU")
        #expect(passesDuring == 0, "the idle loop ran passes: something polls")
        #expect(cpu < 10_000_000, "the GLib thread used \(Double(cpu) / 1e6) ms of CPU in an idle second (1% is 10 ms)")
        host.stop()
        observer.invalidate()
    }

    @Test func invalidatingFromAnotherThreadStopsThePasses() {
        let performed = Counter()
        let source = LoopSource { _ in performed.increment() }
        let host = GLibHostThread { loop, _ in try! loop.add(source) }
        source.signal()
        #expect(waitUntil { performed.current == 1 })
        host.attachment.invalidate()
        #expect(!host.attachment.isValid)
        source.signal()
        // GLib still runs; the loop does not: a GLib timeout served after the signal shows GLib went round.
        let glibRan = ItemsSupport.Flag()
        host.glib.invoke(host.context) { glibRan.set() }
        #expect(waitUntil { glibRan.isSet })
        #expect(performed.current == 1)
        host.stop()
        source.invalidate()
    }

    /// A second attachment of one loop would run every pass twice: it is refused, the first stays, and once the
    /// first is invalidated the loop can be attached again.
    @Test func aSecondAttachmentIsRefusedUntilTheFirstIsInvalidated() throws {
        let host = GLibHostThread()
        let outcome: String = host.onThread {
            do throws(LoopError) {
                try host.loop.attachToGLib(context: host.context)
                return "accepted"
            } catch {
                return error.code.description
            }
        }
        #expect(outcome == "alreadyBridged")
        #expect(host.attachment.isValid)
        let reattached: Bool = host.onThread {
            host.attachment.invalidate()
            guard let again = try? host.loop.attachToGLib(context: host.context) else { return false }
            again.invalidate()
            return true
        }
        #expect(reattached)
        host.stop()
    }

    @Test func theCommonPseudoModeIsRefused() throws {
        #expect(throws: LoopError.self) { try Loop.current.attachToGLib(mode: .common) }
        do {
            try Loop.current.attachToGLib(mode: .common)
        } catch {
            #expect(error.code == .invalidMode)
        }
    }
}

extension LoopItem {
    /// Invalidates any kind of item.
    func invalidateItem() {
        switch self {
        case let source as LoopSource: source.invalidate()
        case let timer as LoopTimer: timer.invalidate()
        case let descriptor as FileDescriptorSource: descriptor.invalidate()
        case let observer as LoopObserver: observer.invalidate()
        default: break
        }
    }
}
