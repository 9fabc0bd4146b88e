import RunLoopKitSystem

/// Empty ``BlockSegment``s of one loop, kept for reuse: posts from other threads take them (with the inbox's lock
/// held) when the inbox's last segment is full, and the loop gives back those it has emptied.
///
/// Threading: safe from any thread (its own short lock, never held while taking another). Keeps at most
/// ``maximumKept`` segments; beyond that, emptied segments are freed, so a one-off burst does not pin its memory.
final class BlockSegmentPool: Sendable {
    /// 256 segments: 65,536 blocks, 3 MiB. (The arrays this replaced kept the capacity of the largest backlog
    /// forever, several times over.) Freeing a 12 KiB segment can make `free` consolidate and trim the heap, so
    /// the pool keeps enough for large bursts.
    static let maximumKept = 256

    private struct FreeList {
        var first: BlockSegment?
        var count = 0
    }

    private let free = Locked(FreeList())

    /// An empty segment: a kept one, else a new one.
    func take() -> BlockSegment {
        let kept = free.withLock { list -> BlockSegment? in
            guard let segment = list.first else { return nil }
            list.first = segment.next
            list.count -= 1
            segment.next = nil
            return segment
        }
        return kept ?? BlockSegment()
    }

    /// Keeps `segment` (emptied, unlinked) for reuse, or frees it when enough are kept.
    func give(_ segment: BlockSegment) {
        segment.start = 0
        segment.end = 0
        let surplus = free.withLock { list -> BlockSegment? in
            guard list.count < Self.maximumKept else { return segment }
            segment.next = list.first
            list.first = segment
            list.count += 1
            return nil
        }
        _ = surplus  // Freed here, after the lock is released.
    }
}
