import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// The pool of empty block segments keeps what recent busy spells used and sheds the rest (issue 42): a burst's
/// segments are let go after quiet stretches, a pool in steady use keeps what it uses, and never more than its bound.
@Suite struct BlockSegmentPoolTests {
    /// Gives `count` new segments to `pool`, as a drained backlog would.
    private static func giveBack(_ count: Int, to pool: BlockSegmentPool) {
        let segments = (0..<count).map { _ in pool.take() }
        for segment in segments { pool.give(segment) }
    }

    @Test func aBurstsSegmentsAreShedHalfAtATimeDownToTheMinimum() {
        let pool = BlockSegmentPool()
        Self.giveBack(100, to: pool)
        #expect(pool.keptCount == 100)
        pool.shedUnused()  // The burst's own stretch: every segment was in use at its start.
        #expect(pool.keptCount == 100)
        var counts: [Int] = []
        for _ in 0..<8 {
            pool.shedUnused()
            counts.append(pool.keptCount)
        }
        #expect(counts == [52, 28, 16, 10, 7, 5, 4, 4])  // Half of what lies above the minimum, rounded up.
    }

    @Test func aPoolInSteadyUseKeepsWhatEachStretchUses() {
        let pool = BlockSegmentPool()
        Self.giveBack(200, to: pool)
        pool.shedUnused()
        for stretch in 0..<20 {
            if stretch >= 10 {
                #expect(pool.keptCount >= 30, "stretch \(stretch): the pool cannot serve a stretch's 30 takes")
            }
            Self.giveBack(30, to: pool)  // Each stretch takes 30 segments at once and gives them back.
            pool.shedUnused()
        }
        #expect((30...31).contains(pool.keptCount))
    }

    @Test func neverMoreThanTheBoundAreKept() {
        let pool = BlockSegmentPool()
        Self.giveBack(BlockSegmentPool.maximumKept + 40, to: pool)
        #expect(pool.keptCount == BlockSegmentPool.maximumKept)
    }

    @Test func aLoopShedsABacklogsSegmentsOnceItSleepsAgain() throws {
        let worker = try LoopThread(name: "segment-pool")
        defer { worker.stop() }
        let gate = Semaphore()
        let ran = Atomic<Int>(0)
        worker.perform { gate.wait() }  // Holds the loop while the backlog builds up.
        let backlog = 30_000  // About 118 segments of 256 blocks.
        for _ in 0..<backlog { worker.perform { ran.add(1, ordering: .relaxed) } }
        gate.post()
        #expect(waitUntil { ran.load(ordering: .relaxed) == backlog })
        #expect(waitUntil { worker.loop.inbox.segments.keptCount > 50 }, "the backlog's segments were not kept")
        // A repeating timer makes the loop sleep between its fires: quiet stretches, each of them ending in a
        // shedding once enough sleeps went by.
        let ticker = try LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { _ in }
        try worker.loop.add(ticker)
        defer { ticker.invalidate() }
        #expect(
            waitUntil(timeout: .seconds(60)) {
                worker.loop.inbox.segments.keptCount <= BlockSegmentPool.minimumKept
            }, "kept \(worker.loop.inbox.segments.keptCount) segments after the backlog")
    }

    /// A loop on virtual time never sleeps in `epoll_wait` while its clock can jump: each jump is its sleep, and the
    /// pool sheds after a backlog as a real loop's does.
    @Test func aVirtualLoopShedsABacklogsSegmentsAsItsClockJumps() throws {
        try Loop.withVirtualTime { loop in
            let ran = Atomic<Int>(0)
            let backlog = 30_000
            for _ in 0..<backlog { loop.perform { ran.add(1, ordering: .relaxed) } }
            try loop.runUntilIdle()
            #expect(ran.load(ordering: .relaxed) == backlog)
            #expect(loop.inbox.segments.keptCount > 50, "the backlog's segments were not kept")
            let ticker = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _ in }
            try loop.add(ticker)
            try loop.advance(by: .seconds(2_000))
            ticker.invalidate()
            #expect(
                loop.inbox.segments.keptCount <= BlockSegmentPool.minimumKept,
                "kept \(loop.inbox.segments.keptCount) segments after 2,000 jumps of the clock")
        }
    }
}
