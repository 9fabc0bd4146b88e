import RunLoopKit
import TestSupport
import Testing

/// Work handed to a helper whose loop's thread has exited, or which was invalidated, can never run: every helper
/// says so (`false` or a thrown error) instead of keeping it forever.
@Suite struct HelpersAfterThreadExitTests {
    /// Helpers made on a loop thread that then exits.
    struct Orphans: Sendable {
        let loop: Loop
        let queue: PassWorkQueue
        let committer: CommitBeforeSleep<Int>
        let scheduler: PhaseTaskScheduler
    }

    static func orphans() throws -> Orphans {
        let made = Box<Orphans>()
        ItemsSupport.onLoopThread { loop in
            made.value = Orphans(
                loop: loop,
                queue: try! PassWorkQueue(loop: loop),
                committer: try! CommitBeforeSleep<Int>(loop: loop) { _ in },
                scheduler: try! PhaseTaskScheduler(loop: loop))
            #expect(!loop.isTerminated)
        }
        return try #require(made.value)
    }

    @Test func aLoopSaysItIsTerminatedOnceItsThreadExited() throws {
        let orphans = try Self.orphans()
        #expect(orphans.loop.isTerminated)
        #expect(!Loop.current.isTerminated)
    }

    @Test func helpersRefuseWorkForALoopWhoseThreadExited() throws {
        let orphans = try Self.orphans()
        #expect(orphans.queue.enqueue {} == false)
        #expect(orphans.queue.pendingCount == 0)
        #expect(orphans.committer.mark(1) == false)
        #expect(orphans.committer.pendingCount == 0)
        #expect(orphans.scheduler.schedule(at: .currentPassEnds) {} == false)
        #expect(throws: LoopError.self) { try PassWorkQueue(loop: orphans.loop) }
    }

    @Test func invalidatedHelpersRefuseWork() throws {
        let worker = try LoopThread(name: "orphan-inv")
        defer { worker.stop() }
        let queue = try PassWorkQueue(loop: worker.loop)
        let committer = try CommitBeforeSleep<Int>(loop: worker.loop) { _ in }
        let scheduler = try PhaseTaskScheduler(loop: worker.loop)
        queue.invalidate()
        committer.invalidate()
        scheduler.invalidate()
        #expect(queue.enqueue {} == false)
        #expect(committer.mark(1) == false)
        #expect(committer.pendingCount == 0)
        #expect(scheduler.schedule(at: .currentPassEnds) {} == false)
    }
}
