import TestSupport
import Testing

@testable import RunLoopKit

/// The segmented queue that holds pending blocks (the inbox's and the loop's): order across segment boundaries,
/// handing a queue over whole, and segment reuse.
@Suite struct BlockQueueTests {
    private static func block(_ tag: Int, into ran: Recorder<Int>) -> PendingBlock {
        PendingBlock(modes: .defaultMode) { ran.append(tag) }
    }

    private static func drain(_ queue: inout BlockQueue, pool: BlockSegmentPool) {
        while let block = queue.popFirst(pool: pool) { block.closure() }
    }

    @Test func blocksComeOutInTheOrderTheyWentInAcrossSegments() {
        let pool = BlockSegmentPool()
        let ran = Recorder<Int>()
        var queue = BlockQueue()
        let total = BlockSegment.capacity * 3 + 7
        for tag in 0..<total { queue.append(Self.block(tag, into: ran), pool: pool) }
        #expect(queue.count == total)
        #expect(queue.contains { _ in true })
        #expect(queue.count { $0.job == nil } == total)
        Self.drain(&queue, pool: pool)
        #expect(queue.isEmpty)
        #expect(queue.first == nil)
        #expect(ran.all == Array(0..<total))
    }

    @Test func interleavedAppendsAndPopsKeepTheOrder() {
        let pool = BlockSegmentPool()
        let ran = Recorder<Int>()
        var queue = BlockQueue()
        var next = 0
        var expected = 0
        for round in 0..<40 {
            for _ in 0..<(round * 17 % 300) {
                queue.append(Self.block(next, into: ran), pool: pool)
                next += 1
            }
            for _ in 0..<(round * 13 % 280) {
                guard let block = queue.popFirst(pool: pool) else { break }
                block.closure()
                expected += 1
            }
            #expect(queue.count == next - expected)
        }
        Self.drain(&queue, pool: pool)
        #expect(ran.all == Array(0..<next))
    }

    @Test func appendingAQueueMovesAllItsBlocksBehindInOrder() {
        let pool = BlockSegmentPool()
        let ran = Recorder<Int>()
        var front = BlockQueue()
        var back = BlockQueue()
        for tag in 0..<300 { front.append(Self.block(tag, into: ran), pool: pool) }
        _ = front.popFirst(pool: pool)?.closure()  // The front starts part-way into its first segment.
        for tag in 300..<900 { back.append(Self.block(tag, into: ran), pool: pool) }
        front.append(contentsOf: &back)
        #expect(back.isEmpty)
        #expect(front.count == 899)
        front.append(Self.block(900, into: ran), pool: pool)
        Self.drain(&front, pool: pool)
        #expect(ran.all == Array(0...900))

        // Into an empty queue: a swap, the order kept.
        var empty = BlockQueue()
        var more = BlockQueue()
        for tag in 0..<5 { more.append(Self.block(tag, into: ran), pool: pool) }
        empty.append(contentsOf: &more)
        #expect(more.isEmpty && empty.count == 5)
    }

    @Test func removingEverythingDropsTheBlocksUnrun() {
        let pool = BlockSegmentPool()
        let ran = Recorder<Int>()
        var queue = BlockQueue()
        for tag in 0..<1000 { queue.append(Self.block(tag, into: ran), pool: pool) }
        queue.removeAll(pool: pool)
        #expect(queue.isEmpty)
        #expect(ran.all.isEmpty)
        queue.append(Self.block(1, into: ran), pool: pool)
        Self.drain(&queue, pool: pool)
        #expect(ran.all == [1])
    }
}
