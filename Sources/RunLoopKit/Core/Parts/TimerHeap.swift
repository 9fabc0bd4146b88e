import RunLoopKitSystem

/// A 4-ary min-heap of timers keyed by (latestFireTime fire time, sequence number), with each timer knowing its index.
///
/// Insert, remove and reposition are O(log n); the earliest timer is O(1). Each entry carries its key next to the
/// timer, so sifting compares entries in the heap's own array instead of following a reference per comparison;
/// four children per node halve the depth of a binary heap, and the four keys of a node's children sit next to
/// each other. Only a move writes through to a timer (its ``LoopTimer/heapIndex``). Sifting (``FourAryHeap``) moves a
/// hole instead of swapping entries. Loop thread only.
///
/// The heap does not own its timers: an entry holds an unretained reference, so moving entries costs no reference
/// counting. A timer is in the heap only while it is scheduled, and a scheduled timer is in at least one mode of
/// its loop, whose array holds it strongly (`Loop.unschedule` takes it out before its last mode lets it go).
struct TimerHeap {
    /// A timer and a copy of its key, taken when it was inserted.
    struct Entry {
        let latestFireTime: Int64
        let sequence: UInt64
        let reference: Unmanaged<LoopTimer>

        var timer: LoopTimer { reference.takeUnretainedValue() }

        /// Tells the timer its new index, without retaining it (the heap holds it unowned; its modes hold it).
        func place(at index: Int) {
            reference._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: index) }
        }

        func precedes(_ other: Entry) -> Bool {
            latestFireTime != other.latestFireTime ? latestFireTime < other.latestFireTime : sequence < other.sequence
        }
    }

    private var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The timer due first, if any.
    var first: LoopTimer? { entries.first?.timer }

    /// The timer due first, unretained (the heap holds it unowned; its modes hold it).
    var firstReference: Unmanaged<LoopTimer>? { entries.first?.reference }

    /// The first timer's latest fire time (its key), read from the heap's own entry.
    var firstLatestFireTime: Int64? { entries.first?.latestFireTime }

    /// The first timer's fire time, read without retaining the timer.
    var firstFireTime: Int64? { entries.first?.reference._withUnsafeGuaranteedRef { $0.fireTime } }

    /// Adds `timer` under its current ``LoopTimer/latestFireTime`` and ``LoopTimer/sequence``, which must not change
    /// while it is in the heap (reposition by removing and inserting again).
    mutating func insert(_ timer: LoopTimer) {
        let entry = Entry(
            latestFireTime: timer.latestFireTime, sequence: timer.sequence, reference: .passUnretained(timer))
        entries.append(entry)
        let hole = entries.count - 1
        entries.withUnsafeMutableBufferPointer { entries in
            FourAryHeap.siftUp(
                entry, from: hole, in: entries, precedes: { $0.precedes($1) }, placed: { $0.place(at: $1) })
        }
    }

    /// Removes `timer`, which must be in this heap.
    mutating func remove(_ timer: LoopTimer) {
        let index = Int(timer.heapIndex)
        require(
            index >= 0 && index < entries.count
                && entries[index].reference.toOpaque() == Unmanaged.passUnretained(timer).toOpaque(),
            "timer is not in this heap")
        timer.heapIndex = -1
        let last = entries.removeLast()
        guard index < entries.count else { return }
        entries.withUnsafeMutableBufferPointer { entries in
            FourAryHeap.refill(
                at: index, with: last, in: entries, precedes: { $0.precedes($1) }, placed: { $0.place(at: $1) })
        }
    }

    /// Traps if any parent sorts after a child, an index is stale or a key copy is out of date. For tests.
    func checkInvariants() {
        for (index, entry) in entries.enumerated() {
            require(Int(entry.timer.heapIndex) == index, "timer heap index is stale")
            require(
                entry.latestFireTime == entry.timer.latestFireTime && entry.sequence == entry.timer.sequence,
                "timer key changed while in the heap")
            if index > 0 {
                require(!entry.precedes(entries[(index - 1) / 4]), "timer heap order is broken")
            }
        }
    }
}
