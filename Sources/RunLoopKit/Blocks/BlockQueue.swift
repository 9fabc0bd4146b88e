import RunLoopKitSystem

/// A first-in first-out queue of pending blocks, stored in fixed-size segments that are recycled through a
/// ``BlockSegmentPool``: the inbox's queue (under its lock) and the loop's own (loop thread only).
///
/// Why not an array: a queue that takes a burst of posts (W2's producers run ahead of the loop by hundreds of
/// thousands of blocks) would grow by doubling, copying every block each time into fresh pages, with page faults
/// and `munmap` for each large buffer, and all arrays that take a turn holding the batch grow so. Segments never
/// move a block once it is stored, are handed from the inbox to the loop by relinking (O(1)), and are reused
/// while warm.
///
/// Threading: a value type with no lock of its own; its owner (the inbox's lock, or the loop's thread) orders
/// every access. A segment belongs to one queue (or the pool) at a time.
struct BlockQueue {
    /// The oldest segment. When the queue is empty it may still hold one empty segment, kept for the next append
    /// as an empty array keeps its capacity.
    private var head: BlockSegment?
    /// The segment appends go to: the last one.
    private var tail: BlockSegment?
    /// How many blocks are queued.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Appends `block`, taking a segment from `pool` when the last one is full.
    @inline(__always)
    mutating func append(_ block: consuming PendingBlock, pool: BlockSegmentPool) {
        if let tail, tail.end < BlockSegment.capacity {
            (tail.slots + tail.end).initialize(to: block)
            tail.end += 1
        } else {
            appendToNewSegment(block, pool: pool)
        }
        count += 1
    }

    /// Stores `stamp` (not 0) as the hand-over stamp of the block appended last. The queue must not be empty.
    @inline(__always)
    mutating func stampLast(_ stamp: UInt32) {
        guard let tail else { return }
        (tail.slots + tail.end - 1).pointee.postedAt = stamp
    }

    @inline(never)
    private mutating func appendToNewSegment(_ block: consuming PendingBlock, pool: BlockSegmentPool) {
        // The last segment is full (an empty queue's kept segment never is: emptying resets it).
        let segment = pool.take()
        if let tail { tail.next = segment } else { head = segment }
        tail = segment
        (segment.slots + segment.end).initialize(to: block)
        segment.end += 1
    }

    /// Removes and returns the oldest block, `nil` when empty. A segment emptied this way goes back to `pool`
    /// unless it is the last one (kept for later appends).
    @inline(__always)
    mutating func popFirst(pool: BlockSegmentPool) -> PendingBlock? {
        guard count > 0, let head else { return nil }
        let block = (head.slots + head.start).move()
        head.start += 1
        count -= 1
        if head.start == head.end { retire(head, pool: pool) }
        return block
    }

    /// `segment`, the head, has been emptied: it moves to the pool when another follows, else it is reset.
    private mutating func retire(_ segment: BlockSegment, pool: BlockSegmentPool) {
        if let next = segment.next {
            head = next
            segment.next = nil
            pool.give(segment)
        } else {
            segment.start = 0
            segment.end = 0
        }
    }

    /// Moves every block of `other` behind this queue's, by relinking segments; `other` is left empty (keeping
    /// this queue's empty segment, if it was empty and kept one).
    mutating func append(contentsOf other: inout BlockQueue) {
        guard !other.isEmpty else { return }
        guard !isEmpty else {
            swap(&self, &other)
            return
        }
        tail!.next = other.head
        tail = other.tail
        count += other.count
        other.head = nil
        other.tail = nil
        other.count = 0
    }

    /// The oldest block, copied, `nil` when empty.
    var first: PendingBlock? {
        guard count > 0, let head else { return nil }
        return head.slots[head.start]
    }

    /// Whether a queued block satisfies `predicate`, oldest first.
    func contains(where predicate: (PendingBlock) -> Bool) -> Bool {
        var segment = isEmpty ? nil : head
        while let current = segment {
            for index in current.start..<current.end where predicate(current.slots[index]) { return true }
            segment = current.next
        }
        return false
    }

    /// How many queued blocks satisfy `predicate`.
    func count(where predicate: (PendingBlock) -> Bool) -> Int {
        var found = 0
        var segment = isEmpty ? nil : head
        while let current = segment {
            for index in current.start..<current.end where predicate(current.slots[index]) { found += 1 }
            segment = current.next
        }
        return found
    }

    /// Drops every block unrun; segments other than one kept go back to `pool`.
    mutating func removeAll(pool: BlockSegmentPool) {
        while popFirst(pool: pool) != nil {}
    }

    /// Gives the empty segment an empty queue kept back to `pool`.
    mutating func releaseSegment(to pool: BlockSegmentPool) {
        require(isEmpty, "RunLoopKit: internal error: releasing the segment of a queue that is not empty")
        if let head { pool.give(head) }
        head = nil
        tail = nil
    }
}

/// A fixed-size run of block slots of a ``BlockQueue``: `slots[start..<end]` are initialized.
///
/// Unchecked Sendable: it is only reached through one queue or the pool at a time, whose owner orders every
/// access (the inbox's and the pool's locks, or the loop's thread).
final class BlockSegment: @unchecked Sendable {
    /// Blocks per segment: 48 bytes each, so 12 KiB, well below `malloc`'s threshold for a mapping of its own.
    static let capacity = 256

    let slots: UnsafeMutablePointer<PendingBlock>
    var start = 0
    var end = 0
    var next: BlockSegment?

    init() {
        slots = .allocate(capacity: Self.capacity)
    }

    deinit {
        (slots + start).deinitialize(count: end - start)
        slots.deallocate()
        // Unlinks the rest one by one: releasing a long chain from its head would otherwise recurse once per
        // segment.
        var rest = next
        next = nil
        while var segment = rest {
            rest = nil
            guard isKnownUniquelyReferenced(&segment) else { break }
            rest = segment.next
            segment.next = nil
        }
    }
}
