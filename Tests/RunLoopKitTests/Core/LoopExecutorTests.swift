import Glibc
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Actors whose executor is a loop (or a LoopExecutor of it): where and when their jobs run.
@Suite struct LoopExecutorTests {
    @Test func actorMethodsRunOnTheLoopThread() async throws {
        let worker = try LoopThread(name: "actor-home")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop)
        let place = await actor.whereAmI()
        #expect(place.onLoopThread)
        #expect(place.threadID == worker.threadID)
        #expect(ThreadIdentity.currentThreadID() != worker.threadID)
    }

    @Test func jobsAndBlocksRunInSubmissionOrder() async throws {
        let worker = try LoopThread(name: "fifo")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop)
        let log = Recorder<String>()
        let busy = BusyBlock()
        #expect(busy.occupy(worker.loop))
        // While the worker is busy, blocks and jobs are queued alternately from this thread: an immediate task
        // enqueues its job on the calling thread, before the next line runs.
        var tasks: [Task<Void, Never>] = []
        for index in 0..<50 {
            worker.perform { log.append("block \(index)") }
            tasks.append(Task.immediateDetached { await actor.record("job \(index)", in: log) })
        }
        busy.release.set()
        for task in tasks { await task.value }
        let expected = (0..<50).flatMap { ["block \($0)", "job \($0)"] }
        #expect(log.all == expected)
        #expect(await actor.callsOffTheLoopThread == 0)
    }

    @Test func callsFromOneTaskRunInOrder() async throws {
        let worker = try LoopThread(name: "one-task")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop)
        for index in 0..<1_000 { await actor.record("\(index)") }
        #expect(await actor.entries == (0..<1_000).map { "\($0)" })
    }

    /// Whether the mode of the nested run, "tracking", is one of the loop's common modes.
    enum Tracking: CaseIterable {
        case notCommon
        case madeCommon
    }

    /// A loop's own executor runs jobs in its common modes: in a nested run of a mode made common, not in a nested run
    /// of another mode (there the job runs once the nested run returned).
    @Test(arguments: Tracking.allCases)
    func jobsRunInANestedRunOnlyIfItsModeIsCommon(tracking: Tracking) async throws {
        let worker = try LoopThread(name: tracking == .madeCommon ? "common" : "modes")
        defer { worker.stop() }
        if tracking == .madeCommon { worker.loop.addCommonMode("tracking") }
        let actor = LoopBoundRecorder(loop: worker.loop)
        let observed = try await Self.runsDuringNestedTracking(worker: worker, actor: actor)
        switch tracking {
        case .notCommon:
            #expect(observed.jobRanInTracking == false)
            #expect(observed.log == ["tracking block", "job"])  // The job ran once the nested run returned.
        case .madeCommon:
            #expect(observed.jobRanInTracking == true)
            #expect(observed.log == ["job", "tracking block"])
        }
    }

    @Test func aChosenModeSetRunsJobsInEachOfItsModes() async throws {
        let worker = try LoopThread(name: "chosen")
        defer { worker.stop() }
        let executor = try worker.loop.executor(in: [.default, "tracking"])
        #expect(executor.modes == [.default, "tracking"])
        let actor = LoopBoundRecorder(loop: worker.loop, executor: executor)
        let observed = try await Self.runsDuringNestedTracking(worker: worker, actor: actor)
        #expect(observed.jobRanInTracking == true)
        // And in the default mode, outside any nested run.
        let place = await actor.whereAmI()
        #expect(place.onLoopThread)
    }

    @Test func aModeSetWithoutTheDefaultModeWaitsForOneOfItsModes() async throws {
        let worker = try LoopThread(name: "tracking-only")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop, executor: try worker.loop.executor(in: ["tracking"]))
        let observed = try await Self.runsDuringNestedTracking(worker: worker, actor: actor)
        #expect(observed.jobRanInTracking == true)
    }

    @Test func runDoesNotFinishWhileAJobIsQueuedForItsMode() {
        let log = Recorder<String>()
        let (_, thread) = startLoopThread { loop in
            // The job is queued on the loop's own thread; the default mode has no item at all.
            let actor = LoopBoundRecorder(loop: loop)
            _ = Task.immediateDetached { await actor.record("job", in: log) }
            loop.run()
            log.append("run returned")
        }
        thread.join()
        #expect(log.all == ["job", "run returned"])
    }

    @Test func anEmptyModeSetIsRefused() {
        let loop = Loop.current
        #expect(throws: LoopError.self) { _ = try loop.executor(in: []) }
    }

    /// Runs the worker's loop nested in "tracking" from a block; while it runs, enqueues one job of `actor`, then a
    /// block for "tracking" that notes whether the job ran and ends the nested run. Answers what it saw, and the
    /// order of the job and the block, once the job has run.
    private static func runsDuringNestedTracking(
        worker: LoopThread, actor: LoopBoundRecorder
    ) async throws -> (jobRanInTracking: Bool, log: [String]) {
        let log = Recorder<String>()
        let inNestedRun = ItemsSupport.Flag()
        let nestedDone = ItemsSupport.Flag()
        let jobRanInTracking = Box<Bool>()
        worker.perform {
            let loop = Loop.current
            let keepAlive = ItemsSupport.keepAlive()
            try! loop.add(keepAlive, to: "tracking")
            inNestedRun.set()
            while !nestedDone.isSet {
                loop.run(in: "tracking", for: .seconds(10))
            }
            keepAlive.invalidate()
        }
        #expect(waitUntil { inNestedRun.isSet })
        let job = Task.immediateDetached { await actor.record("job", in: log) }
        worker.loop.perform(in: "tracking") {
            jobRanInTracking.value = log.all.contains("job")
            log.append("tracking block")
            nestedDone.set()
            Loop.current.stop()
        }
        await job.value
        #expect(waitUntil { nestedDone.isSet })
        return (jobRanInTracking.value ?? false, log.all)
    }

    @Test func aJobNeverRunsInsideAnotherJob() async throws {
        let worker = try LoopThread(name: "no-nesting")
        defer { worker.stop() }
        let actor = NestingActor(loop: worker.loop)
        let log = Recorder<String>()
        await actor.runLoopNested(log: log)
        await actor.waitForInner()
        // The inner job was queued before the nested pass's block, but ran only after the outer job returned.
        #expect(log.all == ["nested pass block", "outer job returns", "inner job"])
    }

    @Test func assumeIsolatedWorksOnTheLoopThread() async throws {
        let worker = try LoopThread(name: "assume")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop)
        _ = await actor.increment()
        let (calls, isolating) = try worker.performAndWait {
            actor.preconditionIsolated()
            worker.loop.checkIsolated()
            return (actor.assumeIsolated { $0.calls }, worker.loop.isIsolatingCurrentContext())
        }
        #expect(calls == 1)
        #expect(isolating == true)
        #expect(worker.loop.isIsolatingCurrentContext() == false)
    }
}

/// An actor whose method runs its loop nested, with another job of the same actor queued meanwhile.
actor NestingActor {
    let loop: Loop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    private var inner: Task<Void, Never>?

    init(loop: Loop) { self.loop = loop }

    func runLoopNested(log: Recorder<String>) {
        inner = enqueueInnerJob(log: log)
        loop.perform { log.append("nested pass block") }
        loop.run(in: .default, for: .zero)
        log.append("outer job returns")
    }

    /// Starts a task that calls this actor; its job is enqueued at once, on the calling thread.
    nonisolated func enqueueInnerJob(log: Recorder<String>) -> Task<Void, Never> {
        Task.immediateDetached { await self.note("inner job", in: log) }
    }

    func note(_ entry: String, in log: Recorder<String>) { log.append(entry) }

    func waitForInner() async { await inner?.value }
}
