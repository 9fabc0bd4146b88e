import RunLoopKitSystem

/// Empty ``BlockSegment``s of one loop, kept for reuse: posts from other threads take them (with the inbox's lock
/// held) when the inbox's last segment is full, and the loop gives back those it has emptied.
///
/// The pool keeps what recent busy spells used and sheds the rest: the loop calls ``noteSleep()`` as it goes to
/// sleep, and every ``sleepsPerShedding`` sleeps the pool frees half of the segments that stayed unused through that
/// whole stretch (the fewest it held at any moment since the last shedding), down to ``minimumKept``. A one-off burst
/// therefore leaves its memory for a few hundred sleeps, not for the loop's lifetime; a loop busy without sleeping
/// keeps what it uses. Never more than ``maximumKept`` are kept. (Issue 42: a pool that only ever grew to the
/// largest backlog seen held ever more 12 KiB segments over an hour's soak.)
///
/// Threading: ``take()`` and ``give(_:)`` from any thread (its own short lock, never held while taking another);
/// ``noteSleep()`` on the loop's thread only.
final class BlockSegmentPool: Sendable {
    /// 256 segments: 65,536 blocks, 3 MiB, the most kept at any time.
    static let maximumKept = 256
    /// Kept through any quiet stretch: 1,024 blocks' worth, 48 KiB, so a loop that sleeps between small bursts never
    /// allocates for them.
    static let minimumKept = 4
    /// How many of the loop's sleeps one stretch lasts: a shedding costs a lock, so it is not done at every sleep.
    static let sleepsPerShedding = 64

    private struct FreeList {
        var first: BlockSegment?
        var count = 0
        /// The fewest segments kept at any moment since the last shedding: that many were never needed meanwhile.
        var fewestSinceShedding = 0
    }

    private let free = Locked(FreeList())
    /// Sleeps since the last shedding. Loop thread only.
    nonisolated(unsafe) private var sleepsSinceShedding = 0

    /// How many empty segments are kept now. Any thread.
    var keptCount: Int { free.withLock { $0.count } }

    /// An empty segment: a kept one, else a new one.
    func take() -> BlockSegment {
        let kept = free.withLock { list -> BlockSegment? in
            guard let segment = list.first else { return nil }
            list.first = segment.next
            list.count -= 1
            list.fewestSinceShedding = min(list.fewestSinceShedding, list.count)
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

    /// The loop is going to sleep: every ``sleepsPerShedding``-th call sheds half of what stayed unused since the
    /// last shedding. One increment otherwise. Loop thread only.
    @inline(__always)
    func noteSleep() {
        sleepsSinceShedding &+= 1
        if sleepsSinceShedding >= Self.sleepsPerShedding { shedUnused() }
    }

    /// Frees half (rounded up) of the segments that stayed unused since the last shedding, keeping at least
    /// ``minimumKept``, and starts a new stretch. Loop thread only (any thread in tests).
    @inline(never)
    func shedUnused() {
        sleepsSinceShedding = 0
        var shed: BlockSegment?  // Freed after the lock is released, when this goes out of scope.
        free.withLock { list in
            let unused = min(list.fewestSinceShedding, list.count - Self.minimumKept)
            var toFree = (unused + 1) / 2
            while toFree > 0, let segment = list.first {
                list.first = segment.next
                segment.next = shed
                shed = segment
                list.count -= 1
                toFree -= 1
            }
            list.fewestSinceShedding = list.count
        }
        // Unlink one by one: a long `next` chain released at once would recurse through the deinitializers.
        while let segment = shed {
            shed = segment.next
            segment.next = nil
        }
    }
}
