/// A 4-ary min-heap of timers keyed by (latest fire time, sequence number), with each timer knowing its index.
///
/// Insert, remove and reposition are O(log n); the earliest timer is O(1). Each entry carries its key next to the
/// timer, so sifting compares entries in the heap's own array instead of following a reference per comparison;
/// four children per node halve the depth of a binary heap, and the four keys of a node's children sit next to
/// each other. Only a move writes through to a timer (its ``LoopTimer/heapIndex``). Loop thread only.
struct TimerHeap {
    /// A timer and a copy of its key, taken when it was inserted.
    struct Entry {
        let latest: Int64
        let sequence: UInt64
        let timer: LoopTimer

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
        timer.heapIndex = entries.count
        entries.append(Entry(latest: timer.latest, sequence: timer.sequence, timer: timer))
        siftUp(entries.count - 1)
    }

    /// Removes `timer`, which must be in this heap.
    mutating func remove(_ timer: LoopTimer) {
        let index = timer.heapIndex
        precondition(
            index >= 0 && index < entries.count && entries[index].timer === timer, "timer is not in this heap")
        let last = entries.count - 1
        if index != last { swapAt(index, last) }
        entries.removeLast()
        timer.heapIndex = -1
        if index < entries.count {
            siftDown(index)
            siftUp(index)
        }
    }

    /// Removes and returns the first timer.
    mutating func removeFirst() -> LoopTimer? {
        guard let top = entries.first?.timer else { return nil }
        remove(top)
        return top
    }

    private mutating func swapAt(_ i: Int, _ j: Int) {
        entries.swapAt(i, j)
        entries[i].timer.heapIndex = i
        entries[j].timer.heapIndex = j
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 4
            guard entries[child].precedes(entries[parent]) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let firstChild = 4 * parent + 1
            guard firstChild < entries.count else { return }
            var smallest = firstChild
            for child in (firstChild + 1)..<min(firstChild + 4, entries.count)
            where entries[child].precedes(entries[smallest]) {
                smallest = child
            }
            guard entries[smallest].precedes(entries[parent]) else { return }
            swapAt(parent, smallest)
            parent = smallest
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
