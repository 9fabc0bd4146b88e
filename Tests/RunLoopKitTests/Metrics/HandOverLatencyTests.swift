import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// `Loop.enableHandOverLatencies()`: how long work handed to a loop waits before it runs, per kind.
@Suite struct HandOverLatencyTests {
    /// Spins on the calling thread for `duration`: a callout that holds its loop busy.
    private static func busy(_ duration: Duration) {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < duration {}
    }

    @Test func theStampCostsABlockNoRoom() {
        // 8 bytes of modes, 16 of closure, 25 of work: the stamp's 4 bytes lie in the padding before the stride of 56.
        #expect(MemoryLayout<PendingBlock>.stride == 56)
    }

    @Test func offMeansNothingIsRecordedOrAllocated() throws {
        let thread = try LoopThread(name: "hol-off")
        defer { thread.stop() }
        thread.loop.perform {}
        try thread.performAndWait {}
        #expect(thread.loop.handOverLatencies() == nil)
    }

    @Test func enabledButIdleIsEmpty() throws {
        let thread = try LoopThread(name: "hol-empty")
        defer { thread.stop() }
        thread.loop.enableHandOverLatencies()
        let latencies = try #require(thread.loop.handOverLatencies())
        for kind in [latencies.blocks, latencies.jobs, latencies.mainQueue, latencies.timers, latencies.descriptors] {
            #expect(kind.count == 0)
            #expect(kind.p999 == .zero)
        }
    }

    @Test func aBlockPostedWhileTheLoopIsBusyRecordsItsWait() throws {
        let thread = try LoopThread(name: "hol-block")
        defer { thread.stop() }
        let loop = thread.loop
        loop.enableHandOverLatencies()
        try thread.performAndWait {}  // The loop has taken the change: the blocks below are recorded.
        let baseline = loop.handOverLatencies()!.blocks.count
        let posted = Atomic<Bool>(false)
        let ran = Atomic<Bool>(false)
        loop.perform {  // Busy for 60 ms from the moment the next block is posted, however late that is.
            while !posted.load(ordering: .acquiring) {}
            Self.busy(.milliseconds(60))
        }
        loop.perform { ran.store(true, ordering: .releasing) }  // Waits for the 60 ms callout to end.
        posted.store(true, ordering: .releasing)
        #expect(waitUntil { ran.load(ordering: .acquiring) })
        let blocks = loop.handOverLatencies()!.blocks
        #expect(blocks.count == baseline + 2)
        #expect(blocks.maximum >= .milliseconds(50))
        #expect(blocks.p999 <= blocks.maximum)
    }

    @Test func blocksALoopQueuesForItselfAreNotCounted() throws {
        let thread = try LoopThread(name: "hol-local")
        defer { thread.stop() }
        let loop = thread.loop
        loop.enableHandOverLatencies()
        try thread.performAndWait {
            let before = loop.handOverLatencies()!.blocks.count
            loop.perform {}
            loop.run(in: .default, for: .zero)
            #expect(loop.handOverLatencies()!.blocks.count == before)
        }
    }

    @Test func anActorJobRecordsItsWait() async throws {
        let thread = try LoopThread(name: "hol-job")
        defer { thread.stop() }
        let loop = thread.loop
        loop.enableHandOverLatencies()
        try thread.performAndWait {}
        loop.perform { Self.busy(.milliseconds(60)) }
        await Task(executorPreference: loop.taskExecutor) {}.value
        let jobs = loop.handOverLatencies()!.jobs
        #expect(jobs.count >= 1)
        // The task's first job may be enqueued only once the busy block began, or before: at least its share.
        #expect(jobs.maximum > .zero)
    }

    @Test func aTimerHeldUpByAnEarlierCalloutShowsItsLateness() throws {
        let lateness = Box<Loop.HandOverLatencies>()
        let (_, thread) = startLoopThread { loop in
            loop.enableHandOverLatencies()
            try! loop.add(try! LoopTimer(after: .milliseconds(10)) { _ in Self.busy(.milliseconds(60)) })
            let fired = LoopBound(false, on: loop)
            try! loop.add(try! LoopTimer(after: .milliseconds(20)) { _ in fired.value = true })
            while !fired.value { loop.run(in: .default, for: .milliseconds(50)) }
            lateness.value = loop.handOverLatencies()
        }
        thread.join()
        let timers = try #require(lateness.value).timers
        #expect(timers.count == 2)
        #expect(timers.maximum >= .milliseconds(45))  // Due at 20 ms, run after the first ends at 70 ms or later.
    }

    @Test func aDescriptorHandlerAfterABusyOneShowsTheWaitSinceTheLoopWoke() throws {
        let pipes = [Pipe(), Pipe()]
        defer { for pipe in pipes { pipe.close() } }
        let figures = Box<Loop.HandOverLatencies>()
        let (_, thread) = startLoopThread { loop in
            loop.enableHandOverLatencies()
            let handled = LoopBound(0, on: loop)
            let sources = pipes.map { pipe in
                try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                    pipe.drain()
                    handled.value += 1
                    Self.busy(.milliseconds(30))
                }
            }
            for source in sources { try! loop.add(source) }
            for pipe in pipes { pipe.write() }  // Both ready before the wait: one epoll_wait reports both.
            while handled.value < 2 { loop.run(in: .default, for: .milliseconds(100)) }
            figures.value = loop.handOverLatencies()
            for source in sources { source.invalidate() }
        }
        thread.join()
        let descriptors = try #require(figures.value).descriptors
        #expect(descriptors.count == 2)
        #expect(descriptors.maximum >= .milliseconds(25))  // The second handler waited for the first.
    }

    @Test func disablingStopsRecordingAndKeepsTheFigures() throws {
        let thread = try LoopThread(name: "hol-disable")
        defer { thread.stop() }
        let loop = thread.loop
        loop.enableHandOverLatencies()
        try thread.performAndWait {}
        let recorded = loop.handOverLatencies()!.blocks.count
        #expect(recorded >= 1)  // The performAndWait block itself.
        loop.disableHandOverLatencies()
        try thread.performAndWait {}
        try thread.performAndWait {}
        #expect(loop.handOverLatencies()!.blocks.count <= recorded + 1)  // At most the one taking the change.
    }

    /// A reset on the loop's thread forgets what was recorded, and recording goes on: a reporting timer reads the
    /// interval's figures, then resets.
    @Test func aResetForgetsTheFiguresAndRecordingGoesOn() throws {
        let thread = try LoopThread(name: "hol-reset")
        defer { thread.stop() }
        let loop = thread.loop
        loop.resetHandOverLatencies()  // Never enabled: nothing to forget, nothing made.
        #expect(loop.handOverLatencies() == nil)
        loop.enableHandOverLatencies()
        for _ in 0..<5 { try thread.performAndWait {} }
        #expect(loop.handOverLatencies()!.blocks.count >= 5)
        let afterReset = try thread.performAndWait { () -> Int in
            loop.resetHandOverLatencies()  // On the loop's thread: at once.
            return loop.handOverLatencies()!.blocks.count
        }
        #expect(afterReset == 0)
        try thread.performAndWait {}
        let blocks = loop.handOverLatencies()!.blocks
        #expect(blocks.count == 1)  // The block after the reset: the one that reset it was counted before it.
        #expect(blocks.minimum <= blocks.maximum)
    }
}
