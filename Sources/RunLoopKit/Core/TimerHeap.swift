/// A 4-ary min-heap of timers keyed by (latest fire time, sequence number), with each timer knowing its index.
///
/// Insert, remove and reposition are O(log n); the earliest timer is O(1). Each entry carries its key next to the
/// timer, so sifting compares entries in the heap's own array instead of following a reference per comparison;
/// four children per node halve the depth of a binary heap, and the four keys of a node's children sit next to
/// each other. Only a move writes through to a timer (its ``LoopTimer/heapIndex``). Sifting moves a hole instead of
/// swapping entries. Loop thread only.
///
/// The heap does not own its timers: an entry holds an unretained reference, so moving entries costs no reference
/// counting. A timer is in the heap only while it is scheduled, and a scheduled timer is in at least one mode of
/// its loop, whose array holds it strongly (`Loop.unschedule` takes it out before its last mode lets it go).
struct TimerHeap {
    /// A timer and a copy of its key, taken when it was inserted.
    struct Entry {
        let latest: Int64
        let sequence: UInt64
        let reference: Unmanaged<LoopTimer>

        var timer: LoopTimer { reference.takeUnretainedValue() }

        func precedes(_ other: Entry) -> Bool {
            latest != other.latest ? latest < other.latest : sequence < other.sequence
        }
    }

    private var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The timer due first, if any.
    var first: LoopTimer? { entries.first?.timer }

    /// Adds `timer` under its current ``LoopTimer/latest`` and ``LoopTimer/sequence``, which must not change while it
    /// is in the heap (reposition by removing and inserting again).
    mutating func insert(_ timer: LoopTimer) {
        let entry = Entry(latest: timer.latest, sequence: timer.sequence, reference: .passUnretained(timer))
        entries.append(entry)
        siftUp(entry, from: entries.count - 1)
    }

    /// Removes `timer`, which must be in this heap.
    mutating func remove(_ timer: LoopTimer) {
        let index = timer.heapIndex
        precondition(
            index >= 0 && index < entries.count
                && entries[index].reference.toOpaque() == Unmanaged.passUnretained(timer).toOpaque(),
            "timer is not in this heap")
        timer.heapIndex = -1
        let last = entries.removeLast()
        guard index < entries.count else { return }
        // Put the last entry in the hole, then move it whichever way its key calls for.
        if index > 0, last.precedes(entries[(index - 1) / 4]) {
            siftUp(last, from: index)
        } else {
            siftDown(last, from: index)
        }
    }

    /// Removes and returns the first timer.
    mutating func removeFirst() -> LoopTimer? {
        guard let top = entries.first?.timer else { return nil }
        remove(top)
        return top
    }

    /// Moves `entry`, destined for the hole at `start`, up past every parent it precedes: each level writes one
    /// entry and one timer's index.
    private mutating func siftUp(_ entry: Entry, from start: Int) {
        entries.withUnsafeMutableBufferPointer { entries in
            var hole = start
            while hole > 0 {
                let parent = (hole - 1) / 4
                let parentEntry = entries[parent]
                guard entry.precedes(parentEntry) else { break }
                entries[hole] = parentEntry
                parentEntry.timer.heapIndex = hole
                hole = parent
            }
            entries[hole] = entry
            entry.timer.heapIndex = hole
        }
    }

    private mutating func siftDown(_ entry: Entry, from start: Int) {
        entries.withUnsafeMutableBufferPointer { entries in
            var hole = start
            let count = entries.count
            while true {
                let firstChild = 4 * hole + 1
                guard firstChild < count else { break }
                var smallest = firstChild
                var child = firstChild + 1
                let end = min(firstChild + 4, count)
                while child < end {
                    if entries[child].precedes(entries[smallest]) { smallest = child }
                    child += 1
                }
                let smallestEntry = entries[smallest]
                guard smallestEntry.precedes(entry) else { break }
                entries[hole] = smallestEntry
                smallestEntry.timer.heapIndex = hole
                hole = smallest
            }
            entries[hole] = entry
            entry.timer.heapIndex = hole
        }
    }

    /// Traps if any parent sorts after a child, an index is stale or a key copy is out of date. For tests.
    func checkInvariants() {
        for (index, entry) in entries.enumerated() {
            precondition(entry.timer.heapIndex == index, "timer heap index is stale")
            precondition(
                entry.latest == entry.timer.latest && entry.sequence == entry.timer.sequence,
                "timer key changed while in the heap")
            if index > 0 {
                precondition(!entry.precedes(entries[(index - 1) / 4]), "timer heap order is broken")
            }
        }
    }
}
