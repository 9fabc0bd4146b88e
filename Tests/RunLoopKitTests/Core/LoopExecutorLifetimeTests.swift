import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Loop executors when their LoopThread stops or their thread exits.
@Suite struct LoopExecutorLifetimeTests {
    private static func stderrText(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func jobsQueuedBeforeStopRunExactlyOnce() async throws {
        let worker = try LoopThread(name: "draining")
        let actor = LoopBoundRecorder(loop: worker.loop)
        let busy = BusyBlock()
        #expect(busy.occupy(worker.loop))
        let log = Recorder<String>()
        let tasks = (0..<500).map { index in Task.immediateDetached { await actor.record("\(index)", in: log) } }
        // stop() joins the thread, so it is called from another thread while the worker is still busy.
        let stopper = TestThread { worker.stop() }
        #expect(waitUntil { worker.isStopped })
        busy.release.set()
        stopper.join()
        #expect(worker.loop.isTerminated)
        for task in tasks { await task.value }
        // The actor cannot be asked any more (its thread has exited): its shared log tells.
        #expect(log.all == (0..<500).map { "\($0)" })
    }

    @Test func aJobForAStoppedWorkerInANonDefaultModeRunsInTheDrain() async throws {
        let worker = try LoopThread(name: "drain-mode")
        let actor = LoopBoundRecorder(loop: worker.loop, executor: try worker.loop.executor(in: ["elsewhere"]))
        let log = Recorder<String>()
        let job = Task.immediateDetached { await actor.record("ran", in: log) }
        worker.stop()
        await job.value
        #expect(log.all == ["ran"])
    }

    @Test func aJobAfterTheThreadExitedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = try! LoopThread(name: "gone-worker")
            let actor = LoopBoundRecorder(loop: worker.loop)
            worker.stop()
            _ = await actor.increment()
        }
        let text = Self.stderrText(result)
        #expect(text.contains("whose thread has exited"))
        #expect(text.contains("an actor job was enqueued on the loop of thread"))
    }

    @Test func aThreadExitingWithQueuedJobsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (_, thread) = startLoopThread { loop in
                // Enqueued on the loop's own thread, which then exits without running its loop.
                let actor = LoopBoundRecorder(loop: loop)
                _ = Task.immediateDetached { _ = await actor.increment() }
            }
            thread.join()
        }
        #expect(Self.stderrText(result).contains("exited with 1 actor job(s) still queued"))
    }

    @Test func checkIsolatedOffTheLoopThreadTrapsNamingBothThreads() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = try! LoopThread(name: "db-worker")
            worker.loop.checkIsolated()
        }
        let text = Self.stderrText(result)
        #expect(text.contains("not on the loop's own thread"))
        #expect(text.contains("\"db-worker\""))
    }

    @Test func assumeIsolatedOffTheLoopThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = try! LoopThread(name: "db-worker")
            let actor = LoopBoundRecorder(loop: worker.loop)
            Self.assumeIsolated(actor)
        }
        // The loop answers isIsolatingCurrentContext() with a definite false off its thread, so the runtime traps
        // with its own message (checkIsolated() is for executors that cannot tell).
        #expect(Self.stderrText(result).contains("Incorrect actor executor assumption"))
    }

    /// Asserts, synchronously, that the caller is isolated to `actor`.
    private static func assumeIsolated(_ actor: LoopBoundRecorder) {
        _ = actor.assumeIsolated { $0.calls }
    }
}
