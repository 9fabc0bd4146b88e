import RunLoopKitSystem

/// The loop's one timer heap: a 4-ary min-heap of ``TimerEntry``s, each a ``LoopTimer`` or a one-shot callback's
/// slot, keyed by (latest fire time, sequence) across both kinds, so the first entry is the next thing due and the
/// loop fires both kinds in one order without merging two heaps.
///
/// Insert and remove by position are O(log n); the first entry is O(1). Each entry carries its key, so sifting
/// (``FourAryHeap``) compares entries in the heap's own array; only a move writes through, to the one place that
/// remembers a position: a timer's ``LoopTimer/heapIndex``, a callback slot's ``CallbackSlots/Slot/place``. The
/// entries live in a ``GrowingBuffer``: growing moves pages, and no uniqueness is checked. Loop thread only.
///
/// The heap does not own its timers: an entry holds an unretained reference, so moving entries costs no reference
/// counting. A timer is in the heap only while it is scheduled, and a scheduled timer is in at least one mode of
/// its loop, whose array holds it strongly (`Loop.unschedule` takes it out before its last mode lets it go).
struct TimerHeap {
    private let entries = GrowingBuffer<TimerEntry>()

    var count: Int { entries.count }
    var isEmpty: Bool { entries.count == 0 }
    /// How many entries the heap holds without growing.
    var capacity: Int { entries.capacity }

    /// The entry due first, if any.
    var first: TimerEntry? { entries.count > 0 ? entries[0] : nil }

    /// The entry at `index` (in `0..<count`).
    subscript(index: Int) -> TimerEntry { entries[index] }

    /// Every entry, in heap order (not sorted). For tests and descriptions.
    var all: UnsafeMutableBufferPointer<TimerEntry> { entries.elements }

    /// Adds `entry`, writing its position (and that of each entry it moves) to its timer or to its slot in `slots`.
    @inline(__always)
    mutating func insert(_ entry: TimerEntry, slots: UnsafeMutableBufferPointer<CallbackSlots.Slot>) {
        entries.append(entry)
        FourAryHeap.siftUp(
            entry, from: entries.count - 1, in: entries.elements, precedes: { $0.precedes($1) },
            placed: { Self.place($0, at: $1, slots: slots) })
    }

    /// Removes the entry at `index` (in `0..<count`) and answers it; the positions of the entries it moves are
    /// written as ``insert(_:slots:)`` does, the removed entry's is left to the caller.
    @inline(__always)
    @discardableResult
    mutating func remove(at index: Int, slots: UnsafeMutableBufferPointer<CallbackSlots.Slot>) -> TimerEntry {
        let removed = entries[index]
        let last = entries.removeLast()
        if index < entries.count {
            FourAryHeap.refill(
                at: index, with: last, in: entries.elements, precedes: { $0.precedes($1) },
                placed: { Self.place($0, at: $1, slots: slots) })
        }
        return removed
    }

    /// Makes room for `capacity` entries, written once so that their pages are in memory. Nothing when there is room.
    mutating func reserve(_ capacity: Int) {
        guard entries.capacity < capacity else { return }
        entries.reserve(capacity)
        let filler = TimerEntry(slot: 0, generation: 0, latestFireTime: 0, sequence: 0)
        let live = entries.count
        for _ in live..<capacity { entries.append(filler) }
        for _ in live..<capacity { _ = entries.removeLast() }
    }

    /// Forgets every entry (their timers and slots are the caller's to reset).
    mutating func removeAll() { entries.removeAll() }

    /// Tells `entry`'s timer or slot that it now sits at `index`, without retaining the timer.
    @inline(__always)
    private static func place(
        _ entry: TimerEntry, at index: Int, slots: UnsafeMutableBufferPointer<CallbackSlots.Slot>
    ) {
        if entry.isTimer {
            entry.timerReference._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: index) }
        } else {
            slots[Int(entry.slot)].place = Int32(truncatingIfNeeded: index)
        }
    }

    /// Traps if any parent sorts after a child, or a timer's index, a timer's key copy or a slot's place is stale.
    /// For tests.
    func checkInvariants(slots: GrowingBuffer<CallbackSlots.Slot>) {
        for (index, entry) in entries.elements.enumerated() {
            if entry.isTimer {
                let timer = entry.timerReference.takeUnretainedValue()
                require(Int(timer.heapIndex) == index, "timer heap index is stale")
                require(
                    entry.latestFireTime == timer.latestFireTime && entry.sequence == timer.sequence,
                    "timer key changed while in the heap")
            } else {
                require(slots[Int(entry.slot)].place == Int32(index), "callback heap position is stale")
                require(slots[Int(entry.slot)].generation == entry.generation, "callback heap entry is stale")
            }
            if index > 0 { require(!entry.precedes(entries[(index - 1) / 4]), "timer heap order is broken") }
        }
    }
}
