import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKitGLib

/// RunLoopKit owns the thread: its loop runs and drives a GLib context of its own. GLib's sources run in the loop's
/// passes, on the loop's thread, at their priorities, with no polling.
@Suite(.enabled(if: GLibTesting.isAvailable, "GLib is not installed"), .timeLimit(.minutes(2)))
struct GLibDriverTests {
    @Test func glibTimeoutsIdlesAndDescriptorWatchesRunOnTheLoopsThread() {
        let events = Recorder<String>()
        let offThread = Counter()
        let pipe = Pipe()
        defer { pipe.close() }
        let loopBox = Box<Loop>()
        let readEnd = pipe.readEnd
        let driving = GLibDrivingThread { loop, context in
            loopBox.value = loop
            let glib = GLibTesting.calls!
            glib.addTimeout(context, milliseconds: 20) {
                if !loop.isCurrent { offThread.increment() }
                events.append("timeout")
                return false
            }
            glib.addIdle(context) {
                if !loop.isCurrent { offThread.increment() }
                events.append("idle")
                return false
            }
            glib.addDescriptorWatch(context, descriptor: readEnd, condition: 1) { _ in
                if !loop.isCurrent { offThread.increment() }
                pipe.drain()
                events.append("descriptor")
                return false
            }
        }
        #expect(waitUntil { events.all.contains("timeout") && events.all.contains("idle") })
        pipe.write()
        #expect(waitUntil { events.all.contains("descriptor") })
        #expect(offThread.current == 0)
        driving.stop()
    }

    @Test func workSentByAnotherThreadWakesTheLoop() {
        // g_main_context_invoke from another thread attaches an idle source and signals GLib's wake-up descriptor,
        // which the loop sleeps on.
        let ran = Counter()
        let driving = GLibDrivingThread()
        for round in 1...20 {
            #expect(waitUntil { driving.loop.isWaiting })
            driving.glib.invoke(driving.context) {
                if driving.loop.isCurrent { ran.increment() }
            }
            #expect(waitUntil { ran.current == round })
        }
        driving.stop()
    }

    @Test func prioritiesAreHonoured() {
        // Three idles added in one pass: GLib dispatches the most urgent first, one priority per iteration.
        let order = Recorder<Int32>()
        let driving = GLibDrivingThread()
        let context = Box(Int(bitPattern: driving.context))
        driving.loop.perform {
            let glib = GLibTesting.calls!
            let target = OpaquePointer(bitPattern: context.value!)
            for priority: Int32 in [300, -50, 100] {
                glib.addIdle(target, priority: priority) {
                    order.append(priority)
                    return false
                }
            }
        }
        #expect(waitUntil { order.count == 3 })
        #expect(order.all == [-50, 100, 300])
        driving.stop()
    }

    @Test func aSourceAddedByALoopHandlerRunsWithoutAnotherWakeUp() {
        // `g_idle_add` on the thread that owns the context wakes nothing: the driver must prepare GLib's iteration
        // after the pass's handlers, right before the loop sleeps, to see it.
        let ran = Counter()
        let driving = GLibDrivingThread()
        let context = Box(Int(bitPattern: driving.context))
        let source = LoopSource { _ in
            GLibTesting.calls!.addIdle(OpaquePointer(bitPattern: context.value!)) {
                ran.increment()
                return false
            }
        }
        driving.onThread { try! driving.loop.add(source) }
        #expect(waitUntil { driving.loop.isWaiting })
        source.signal()
        #expect(waitUntil(timeout: .seconds(5)) { ran.current == 1 })
        driving.stop()
        source.invalidate()
    }

    @Test func aBusyLoopStillServesGLibTimeouts() throws {
        // A source that signals itself keeps every pass polling (no beforeWaiting); GLib's timeout must still fire.
        let ticks = Counter()
        let spins = Counter()
        let busy = LoopSource { source in
            spins.increment()
            if ticks.current < 5 { source.signal() }
        }
        let driving = GLibDrivingThread { loop, context in
            try! loop.add(busy)
            GLibTesting.calls!.addTimeout(context, milliseconds: 10) {
                ticks.increment()
                return ticks.current < 5
            }
        }
        busy.signal()
        #expect(waitUntil { ticks.current == 5 })
        #expect(spins.current > 5, "the loop was not kept busy")
        driving.stop()
        busy.invalidate()
    }

    @Test func aBusyLoopSeesAGLibSourceItsOwnHandlerAdded() throws {
        // The loop never sleeps (no beforeWaiting) and GLib has nothing to wake it for: the idle the busy handler adds
        // on the context's own thread must still be found, by the driver's preparation at the start of a busy pass.
        let idleRan = ItemsSupport.Flag()
        let spinsAfterAdding = Counter()
        let added = ItemsSupport.Flag()
        let context = Box<Int>()
        let busy = LoopSource { source in
            if !added.isSet {
                added.set()
                GLibTesting.calls!.addIdle(OpaquePointer(bitPattern: context.value!)) {
                    idleRan.set()
                    return false
                }
            } else {
                spinsAfterAdding.increment()
            }
            if !idleRan.isSet && spinsAfterAdding.current < 50_000_000 { source.signal() }
        }
        let driving = GLibDrivingThread { loop, pointer in
            context.value = Int(bitPattern: pointer)
            try! loop.add(busy)
        }
        busy.signal()
        #expect(waitUntil(timeout: .seconds(5)) { idleRan.isSet })
        #expect(spinsAfterAdding.current < 50_000_000, "the idle ran only once the loop went to sleep")
        driving.stop()
        busy.invalidate()
    }

    @Test func aDescriptorWatchedByGLibAndByTheLoopReachesBoth() throws {
        try GLibTesting.expectADescriptorWatchedByBothReachesBoth { setUp in
            let thread = GLibDrivingThread(setUp: setUp)
            return (thread.loop, thread.stop)
        }
    }

    @Test func aDescriptorNumberReusedForAnotherFileIsWatchedAnew() {
        // GLib's watch of a pipe ends and the pipe is closed; a new pipe gets the same number and a new watch, all
        // between two of the loop's sleeps. The new pipe's data must wake the loop.
        let first = Pipe()
        let number = first.readEnd
        let heard = Recorder<String>()
        let firstWatch = Box<GLibSourceReference>()
        let second = Box<CInt>()
        let driving = GLibDrivingThread { _, context in
            firstWatch.value = GLibTesting.calls!.addDescriptorWatch(context, descriptor: number, condition: 1) { _ in
                heard.append("first")
                return true
            }
        }
        #expect(waitUntil { driving.loop.isWaiting })
        let context = Box(Int(bitPattern: driving.context))
        let reused = driving.onThread { () -> Bool in
            // On the loop's thread, in one pass: drop the watch, close the pipe, make a pipe on the same number.
            // The last two in one step (`moveDescriptor`), so no parallel test takes the number in between.
            let glib = GLibTesting.calls!
            let target = OpaquePointer(bitPattern: context.value!)
            firstWatch.value!.destroy()
            var ends: [CInt] = [0, 0]
            guard pipe(&ends) == 0, moveDescriptor(ends[0], onto: number) else { return false }
            close(first.writeEnd)
            second.value = ends[1]
            glib.addDescriptorWatch(target, descriptor: number, condition: 1) { _ in
                var byte: UInt8 = 0
                _ = read(number, &byte, 1)
                heard.append("second")
                return true
            }
            return true
        }
        #expect(reused)
        #expect(waitUntil { driving.loop.isWaiting })
        var byte: UInt8 = 7
        _ = write(second.value!, &byte, 1)
        #expect(waitUntil(timeout: .seconds(5)) { heard.all.contains("second") })
        #expect(!heard.all.contains("first"))
        driving.stop()
        close(number)
        close(second.value!)
    }

    @Test func aClosedDescriptorWhoseFileLivesOnNeitherSpinsTheLoopNorReachesItsNumbersNextOwner() {
        // GLib's watch of a pipe ends, and the pipe's descriptor is closed while a duplicate keeps the pipe open:
        // epoll keeps the old entry (it is keyed by the open file), and no call by number reaches it any more. When
        // the pipe gets data, that orphan reports: it must not keep the loop awake, nor pass for the new file that now
        // has the old number.
        let old = Pipe()
        let number = old.readEnd
        let heard = Recorder<String>()
        let firstWatch = Box<GLibSourceReference>()
        let duplicate = Box<CInt>()
        let second = Box<CInt>()
        let wakeUps = Counter()
        let observer = LoopObserver(activities: .afterWaiting) { _, _ in wakeUps.increment() }
        let driving = GLibDrivingThread { loop, context in
            try! loop.add(observer, to: .common)
            firstWatch.value = GLibTesting.calls!.addDescriptorWatch(context, descriptor: number, condition: 1) { _ in
                heard.append("old")
                return true
            }
        }
        #expect(waitUntil { driving.loop.isWaiting })
        let context = SharedContext(driving.context)
        let reused = driving.onThread { () -> Bool in
            firstWatch.value!.destroy()
            duplicate.value = dup(number)  // The old pipe lives on.
            // Closed and given a new pipe in one step (`moveDescriptor`).
            var ends: [CInt] = [0, 0]
            guard pipe(&ends) == 0, moveDescriptor(ends[0], onto: number) else { return false }
            second.value = ends[1]
            GLibTesting.calls!.addDescriptorWatch(context.pointer, descriptor: number, condition: 1) { _ in
                var byte: UInt8 = 0
                _ = read(number, &byte, 1)
                heard.append("new")
                return true
            }
            return true
        }
        #expect(reused)
        #expect(waitUntil { driving.loop.isWaiting })
        old.write()  // The orphan's file becomes readable, and stays so (nobody reads it).
        #expect(waitUntil { wakeUps.current > 0 })
        #expect(waitUntil { driving.loop.isWaiting })
        let wakeUpsAfterOrphan = wakeUps.current
        usleep(100_000)  // A window in which a spinning loop would wake thousands of times.
        #expect(wakeUps.current - wakeUpsAfterOrphan <= 2, "the orphan kept waking the loop")
        #expect(heard.all.isEmpty, "the orphan's report reached a watch: \(heard.all)")
        var byte: UInt8 = 1
        _ = write(second.value!, &byte, 1)
        #expect(waitUntil { heard.all == ["new"] })
        driving.stop()
        observer.invalidate()
        close(number)
        close(second.value!)
        close(duplicate.value!)
        close(old.writeEnd)
    }

    @Test func anIdleDrivenContextCostsTheLoopNothing() {
        let passes = Counter()
        let observer = LoopObserver(activities: .afterWaiting) { _, _ in passes.increment() }
        let driving = GLibDrivingThread { loop, context in
            try! loop.add(observer, to: .common)
            // A GLib timeout far away: the loop must sleep until then, not poll towards it.
            GLibTesting.calls!.addTimeout(context, milliseconds: 60_000) { false }
        }
        #expect(waitUntil { driving.loop.isWaiting })
        let cpuBefore = driving.onThread { threadCPUNanoseconds() }
        #expect(waitUntil { driving.loop.isWaiting })
        let passesBefore = passes.current
        usleep(1_000_000)  // The measured idle second, not a wait for something to happen.
        let wakeUps = passes.current - passesBefore
        let cpu = driving.onThread { threadCPUNanoseconds() } - cpuBefore
        TestFigures.report("[glib] driven, idle second: \(wakeUps) wake-ups, \(Double(cpu) / 1e6) ms CPU")
        #expect(wakeUps == 0, "the idle loop woke up: something polls")
        #expect(cpu < 10_000_000, "the loop's thread used \(Double(cpu) / 1e6) ms of CPU in an idle second")
        driving.stop()
        observer.invalidate()
    }

    @Test func aLoopAttachedToTheContextItDrivesNeitherSpinsNorStalls() throws {
        // Both directions at once on one loop and one context is a mistake, but a harmless one: the attachment's
        // descriptor (the loop's own epoll set) cannot sit in the driver's set, and is left unwatched.
        let performed = Counter()
        let idles = Counter()
        let wakeUps = Counter()
        let source = LoopSource { _ in performed.increment() }
        let observer = LoopObserver(activities: .afterWaiting) { _, _ in wakeUps.increment() }
        let driving = GLibDrivingThread { loop, context in
            try! loop.add(source)
            try! loop.add(observer, to: .common)
            try! loop.attachToGLib(context: context)
            GLibTesting.calls!.addIdle(context) {
                idles.increment()
                return false
            }
        }
        #expect(waitUntil { idles.current == 1 })
        #expect(waitUntil { driving.loop.isWaiting })
        source.signal()
        #expect(waitUntil { performed.current == 1 })
        #expect(waitUntil { driving.loop.isWaiting })
        let before = wakeUps.current
        usleep(100_000)  // A window in which a spinning loop would wake thousands of times.
        #expect(wakeUps.current - before <= 2)
        driving.stop()
        source.invalidate()
        observer.invalidate()
    }

    /// A nested GLib main loop on the driven context (a modal dialog; here 200 ms, quit by a GLib timeout) keeps the
    /// loop running inside it, whether it starts in a GLib callback the driver dispatched or in a handler of the
    /// loop: the loop's timer keeps ticking and a signal from another thread is handled. (Before, the loop stalled
    /// for the nested loop's whole length.)
    @Test(arguments: ["in a GLib callback", "in a loop handler"])
    func aNestedGLibLoopKeepsTheLoopRunning(startedFrom place: String) throws {
        let ticks = Counter()
        let signalled = ItemsSupport.Flag()
        let ticksDuringNested = Box<Int>()
        let inNested = ItemsSupport.Flag()
        let signal = LoopSource { _ in signalled.set() }
        let timer = try LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in ticks.increment() }
        let nestedRun: @Sendable (OpaquePointer) -> Void = { context in
            let glib = GLibTesting.calls!
            let nested = SharedContext(glib.newMainLoop(context))
            glib.addTimeout(context, milliseconds: 200) {
                glib.quit(nested.pointer)
                return false
            }
            let before = ticks.current
            inNested.set()
            glib.run(nested.pointer)
            ticksDuringNested.value = ticks.current - before
            glib.unref(mainLoop: nested.pointer)
        }
        let contextBox = Box<SharedContext>()
        let opener = LoopSource { _ in nestedRun(contextBox.value!.pointer) }
        let driving = GLibDrivingThread { loop, context in
            contextBox.value = SharedContext(context)
            try! loop.add(signal)
            try! loop.add(timer)
            try! loop.add(opener)
        }
        if place == "in a GLib callback" {
            nonisolated(unsafe) let context = driving.context
            driving.glib.addIdle(context) {
                nestedRun(context)
                return false
            }
            driving.loop.wakeUp()
        } else {
            opener.signal()
        }
        #expect(waitUntil { inNested.isSet })
        signal.signal()
        #expect(waitUntil { ticksDuringNested.value != nil })
        #expect(signalled.isSet)
        #expect(
            (ticksDuringNested.value ?? 0) >= 3,
            "the loop's 5 ms timer ticked \(ticksDuringNested.value ?? 0) times in 200 ms")
        driving.stop()
        timer.invalidate()
        signal.invalidate()
        opener.invalidate()
    }

    /// Driving twice would iterate the context twice per pass (the thread's second acquire succeeds): refused.
    @Test func aSecondDriverOfOneLoopIsRefused() throws {
        let driving = GLibDrivingThread()
        let outcome: String = driving.onThread {
            do throws(LoopError) {
                try driving.loop.driveGLib(context: driving.context)
                return "accepted"
            } catch {
                return error.code.description
            }
        }
        #expect(outcome == "alreadyBridged")
        #expect(driving.driver.isValid)
        driving.stop()
    }

    @Test func aContextAnotherThreadIteratesIsRefused() throws {
        let glibOnly = GLibOnlyThread { _ in }
        nonisolated(unsafe) let context = glibOnly.context
        let outcome = Box<String>()
        let thread = TestThread {
            do throws(LoopError) {
                let driver = try Loop.current.driveGLib(context: context)
                driver.invalidate()
                outcome.value = "driven"
            } catch {
                outcome.value = "\(error.code)"
            }
        }
        thread.join()
        #expect(outcome.value == "contextOwnedElsewhere")
        glibOnly.stop()
    }

    @Test func anInvalidatedDriverReleasesTheContext() {
        let driving = GLibDrivingThread()
        let context = driving.context
        driving.onThread { driving.driver.invalidate() }
        // Another thread can now iterate the context.
        let ran = ItemsSupport.Flag()
        let glib = GLibTesting.calls!
        glib.addIdle(context) {
            ran.set()
            return false
        }
        nonisolated(unsafe) let pointer = context
        let thread = TestThread { while !ran.isSet { glib.iterate(pointer, mayBlock: true) } }
        thread.join()
        #expect(ran.isSet)
        driving.stop()
    }
}
