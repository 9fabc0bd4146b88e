/// A binary min-heap of timers keyed by (latest fire time, sequence number), with each timer knowing its index.
///
/// Insert, remove and reposition are O(log n); the earliest timer is O(1). Loop thread only.
struct TimerHeap {
    private(set) var storage: [LoopTimer] = []

    var isEmpty: Bool { storage.isEmpty }
    var count: Int { storage.count }

    /// The timer due first, if any.
    var first: LoopTimer? { storage.first }

    mutating func insert(_ timer: LoopTimer) {
        timer.heapIndex = storage.count
        storage.append(timer)
        siftUp(storage.count - 1)
    }

    /// Removes `timer`, which must be in this heap.
    mutating func remove(_ timer: LoopTimer) {
        let index = timer.heapIndex
        precondition(index >= 0 && index < storage.count && storage[index] === timer, "timer is not in this heap")
        let last = storage.count - 1
        if index != last {
            swapAt(index, last)
        }
        storage.removeLast()
        timer.heapIndex = -1
        if index < storage.count {
            siftDown(index)
            siftUp(index)
        }
    }

    /// Removes and returns the first timer.
    mutating func removeFirst() -> LoopTimer? {
        guard let top = storage.first else { return nil }
        remove(top)
        return top
    }

    private static func precedes(_ a: LoopTimer, _ b: LoopTimer) -> Bool {
        a.latest != b.latest ? a.latest < b.latest : a.sequence < b.sequence
    }

    private mutating func swapAt(_ i: Int, _ j: Int) {
        storage.swapAt(i, j)
        storage[i].heapIndex = i
        storage[j].heapIndex = j
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(storage[child], storage[parent]) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < storage.count else { return }
            let right = left + 1
            var smallest = left
            if right < storage.count, Self.precedes(storage[right], storage[left]) { smallest = right }
            guard Self.precedes(storage[smallest], storage[parent]) else { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// Traps if any parent sorts after a child or an index is stale. For tests and internal checks.
    func checkInvariants() {
        for (index, timer) in storage.enumerated() {
            precondition(timer.heapIndex == index, "timer heap index is stale")
            if index > 0 {
                precondition(!Self.precedes(timer, storage[(index - 1) / 2]), "timer heap order is broken")
            }
        }
    }
}
