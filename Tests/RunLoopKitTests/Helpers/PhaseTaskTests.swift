import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// A worker loop with a recording observer (order 0, before the scheduler's) and a scheduler.
private struct PhaseFixture {
    let worker: LoopThread
    let scheduler: PhaseTaskScheduler
    /// Activities as "activity:<name>", tasks as "task:<name>", blocks as "block:<name>", in callout order.
    let events = Recorder<String>()

    init(name: String, extraModes: [Loop.Mode] = []) throws {
        worker = try LoopThread(name: name)
        scheduler = try PhaseTaskScheduler(loop: worker.loop)
        let events = self.events
        let recorder = LoopObserver(activities: .all, order: 0) { _, activity in events.append("activity:\(activity)") }
        try worker.loop.add(recorder, to: .common)
        for mode in extraModes { try worker.loop.add(recorder, to: mode) }
        try worker.performAndWait {}  // The observer is in place before the tests start.
    }

    func task(_ name: String) -> @Sendable () -> Void {
        let events = self.events
        return { events.append("task:\(name)") }
    }

    /// The last activity recorded before task `name` ran.
    func activity(before name: String) -> String? {
        let all = events.all
        guard let index = all.firstIndex(of: "task:\(name)") else { return nil }
        return all[..<index].last { $0.hasPrefix("activity:") }.map { String($0.dropFirst("activity:".count)) }
    }

    func index(of name: String) -> Int? { events.all.firstIndex(of: "task:\(name)") }

    func stop() {
        scheduler.invalidate()
        worker.stop()
    }
}

@Suite struct PhaseTaskTests {
    /// A task scheduled from another thread for a sleeping loop wakes it and runs on its thread, at its phase's
    /// activity: the next pass begins after afterWaiting, the current pass ends at beforeWaiting.
    @Test(arguments: [(LoopPhase.nextPassBegins, "afterWaiting"), (.currentPassEnds, "beforeWaiting")])
    func aTaskFromAnotherThreadWakesTheLoopAndRunsAtItsPhase(_ phase: LoopPhase, after activity: String) throws {
        let fixture = try PhaseFixture(name: "pt-\(phase)")
        defer { fixture.stop() }
        #expect(waitUntil { fixture.worker.loop.isWaiting })
        let onWorker = Box<Bool>()
        fixture.scheduler.schedule(at: phase) {
            onWorker.value = Loop.current === fixture.worker.loop
            fixture.events.append("task:phase")
        }
        #expect(waitUntil { fixture.index(of: "phase") != nil })
        #expect(fixture.activity(before: "phase") == activity)
        #expect(onWorker.value == true)
    }

    @Test func idleFromAnotherThreadWakesTheLoopAndRunsOnceWhenTheWokenPassEnds() throws {
        let fixture = try PhaseFixture(name: "pt-idle")
        defer { fixture.stop() }
        #expect(waitUntil { fixture.worker.loop.isWaiting })
        fixture.events.removeAll()  // The loop sleeps: nothing is recorded until the task wakes it.
        let onWorker = Box<Bool>()
        let runs = Counter()
        fixture.scheduler.schedule(at: .idle) {
            onWorker.value = Loop.current === fixture.worker.loop
            runs.increment()
            fixture.events.append("task:idle")
        }
        #expect(waitUntil { fixture.index(of: "idle") != nil })
        let events = fixture.events.all
        let idle = try #require(fixture.index(of: "idle"))
        // The wake-up the scheduling sent begins a pass; no current-pass-end or next-pass task is pending, so the
        // task runs at that pass's beforeWaiting: the first one after the wake-up, with no other wake-up between.
        #expect(events.first == "activity:afterWaiting")
        #expect(events.firstIndex(of: "activity:beforeWaiting") == idle - 1)
        #expect(events[..<idle].filter { $0 == "activity:afterWaiting" }.count == 1)
        #expect(onWorker.value == true)
        // More passes, each with a beforeWaiting and a sleep: the task does not run again.
        for _ in 0..<5 {
            try fixture.worker.performAndWait {}
            #expect(waitUntil { fixture.worker.loop.isWaiting })
        }
        #expect(fixture.events.all.filter { $0 == "activity:beforeWaiting" }.count >= 6)
        #expect(runs.current == 1)
        #expect(fixture.events.all.filter { $0 == "task:idle" }.count == 1)
    }

    @Test func phasesScheduledDuringAPassRunInTheirOrder() throws {
        let fixture = try PhaseFixture(name: "pt-order")
        defer { fixture.stop() }
        let scheduler = fixture.scheduler
        fixture.worker.perform {
            fixture.events.append("block:start")
            scheduler.schedule(at: .idle, fixture.task("idle"))
            scheduler.schedule(at: .nextPassBegins, fixture.task("next"))
            scheduler.schedule(at: .currentPassEnds, fixture.task("end"))
            scheduler.schedule(at: .currentPassEnds, fixture.task("end2"))
        }
        #expect(waitUntil { fixture.index(of: "idle") != nil })
        let all = fixture.events.all
        let start = try #require(all.firstIndex(of: "block:start"))
        let end = try #require(fixture.index(of: "end"))
        let end2 = try #require(fixture.index(of: "end2"))
        let next = try #require(fixture.index(of: "next"))
        let idle = try #require(fixture.index(of: "idle"))
        // The pass that ran the block ends first; then the loop wakes (without sleeping) for the next pass; idle
        // comes at the end of a pass that had nothing else of the scheduler's.
        #expect(start < end && end + 1 == end2 && end2 < next && next < idle)
        #expect(fixture.activity(before: "end") == "beforeWaiting")
        #expect(fixture.activity(before: "next") == "afterWaiting")
        #expect(fixture.activity(before: "idle") == "beforeWaiting")
        // The end tasks ran in the same pass as the block: no wake-up between them.
        #expect(!all[start..<end].contains("activity:afterWaiting"))
    }

    @Test func runExitEndsThePassForCurrentPassEndsAndIdle() throws {
        let fixture = try PhaseFixture(name: "pt-exit", extraModes: ["polled"])
        defer { fixture.stop() }
        let scheduler = fixture.scheduler
        try fixture.worker.performAndWait {
            let loop = Loop.current
            loop.perform(in: "polled") {
                scheduler.schedule(at: .idle, in: ["polled"], fixture.task("idle"))
                scheduler.schedule(at: .currentPassEnds, in: ["polled"], fixture.task("end"))
                scheduler.schedule(at: .nextPassBegins, in: ["polled"], fixture.task("next"))
            }
            // A zero-length run never sleeps, so it has no beforeWaiting: the run's exit ends the pass.
            loop.run(in: "polled", for: .zero)
        }
        #expect(fixture.activity(before: "end") == "exit")
        #expect(fixture.activity(before: "idle") == "exit")
        #expect(try #require(fixture.index(of: "end")) < (try #require(fixture.index(of: "idle"))))
        #expect(fixture.index(of: "next") == nil)  // Waits for a wake-up in "polled".
    }

    @Test func tasksRunOnlyInTheirModes() throws {
        let tracking: Loop.Mode = "tracking"
        let fixture = try PhaseFixture(name: "pt-modes", extraModes: [tracking])
        defer { fixture.stop() }
        let keepAlive = try LoopTimer(after: .seconds(3600)) { _ in }
        try fixture.worker.loop.add(keepAlive, to: tracking)
        let scheduler = fixture.scheduler
        scheduler.schedule(at: .currentPassEnds, in: [tracking], fixture.task("tracking"))
        scheduler.schedule(at: .currentPassEnds, in: [.common], fixture.task("common"))
        scheduler.schedule(at: .currentPassEnds, in: [.default, tracking], fixture.task("either"))
        #expect(waitUntil { fixture.index(of: "common") != nil && fixture.index(of: "either") != nil })
        // The worker runs the default mode only: the tracking task waits.
        #expect(fixture.index(of: "tracking") == nil)
        fixture.events.removeAll()
        try fixture.worker.performAndWait {
            Loop.current.run(in: tracking, for: .milliseconds(200))
        }
        #expect(fixture.activity(before: "tracking") == "beforeWaiting")
        #expect(fixture.events.all.filter { $0.hasPrefix("task:") } == ["task:tracking"])

        // A common-mode task runs in a mode that joins the common modes later.
        fixture.worker.loop.addCommonMode(tracking)
        fixture.events.removeAll()
        try fixture.worker.performAndWait {
            scheduler.schedule(at: .currentPassEnds, fixture.task("late common"))
            Loop.current.run(in: tracking, for: .milliseconds(200))
        }
        #expect(fixture.activity(before: "late common") == "beforeWaiting")
        keepAlive.invalidate()
    }

    @Test func eachTaskRunsExactlyOnceUnderConcurrentScheduling() throws {
        let fixture = try PhaseFixture(name: "pt-once")
        defer { fixture.stop() }
        let ran = Recorder<Int>()
        let phases: [LoopPhase] = [.nextPassBegins, .currentPassEnds, .idle]
        let threads = (0..<4).map { thread in
            TestThread {
                for index in 0..<250 {
                    let id = thread * 250 + index
                    fixture.scheduler.schedule(at: phases[id % 3]) { ran.append(id) }
                }
            }
        }
        for thread in threads { thread.join() }
        #expect(waitUntil { ran.count >= 1000 })
        // Make the loop go round a few more times: nothing runs twice.
        for _ in 0..<5 { try fixture.worker.performAndWait {} }
        #expect(ran.all.sorted() == Array(0..<1000))
    }

    @Test func aTaskScheduledByATaskDoesNotWaitForANaturalWakeUp() throws {
        let fixture = try PhaseFixture(name: "pt-chain")
        defer { fixture.stop() }
        let scheduler = fixture.scheduler
        let count = Counter()
        @Sendable func step() {
            if count.increment() < 5 { scheduler.schedule(at: .currentPassEnds, step) }
        }
        scheduler.schedule(at: .currentPassEnds, step)
        #expect(waitUntil(timeout: .seconds(5)) { count.current == 5 })
    }

    @Test func pendingTasksDoNotKeepAModeRunningAndInvalidateDropsThem() throws {
        let worker = try LoopThread(name: "pt-alive")
        defer { worker.stop() }
        let scheduler = try PhaseTaskScheduler(loop: worker.loop)
        let ran = Counter()
        let result = try worker.performAndWait {
            scheduler.schedule(at: .currentPassEnds, in: ["empty"]) { ran.increment() }
            return Loop.current.run(in: "empty", for: .seconds(5))
        }
        #expect(result == .finished)
        #expect(ran.current == 0)
        scheduler.invalidate()
        scheduler.schedule(at: .currentPassEnds) { ran.increment() }
        try worker.performAndWait { Loop.current.run(in: .default, for: .milliseconds(50)) }
        #expect(ran.current == 0)
    }

    /// A task for an empty list of modes could never run: it is dropped at once and the call answers false.
    @Test func aTaskForNoModeIsDroppedAtOnce() throws {
        let fixture = try PhaseFixture(name: "pt-nomode")
        defer { fixture.stop() }
        #expect(fixture.scheduler.schedule(at: .currentPassEnds, in: [], fixture.task("none")) == false)
        #expect(fixture.scheduler.schedule(at: .currentPassEnds, fixture.task("common")))
        #expect(waitUntil { fixture.index(of: "common") != nil })
        try fixture.worker.performAndWait {}
        #expect(fixture.index(of: "none") == nil)
    }
}
