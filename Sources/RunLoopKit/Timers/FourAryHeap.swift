/// The sifting of the loop's timer heap (``TimerHeap``, for ``LoopTimer``s and one-shot callbacks alike): a 4-ary
/// min-heap in a buffer, where a node's children are at `4i + 1 … 4i + 4`, so the keys compared at one level sit
/// next to each other and the tree is half as deep as a binary one.
///
/// An entry is moved by moving a hole, not by swapping: each level writes one entry, and `placed(entry, index)`
/// tells the heap's owner where an entry now sits (a timer's index, a slot's place), which removal by position needs.
/// `precedes(a, b)` is the heap order (earlier key first). Loop thread only, like the heap.
enum FourAryHeap {
    /// The heap's entries, in heap order.
    typealias Buffer<Entry> = UnsafeMutableBufferPointer<Entry>
    /// The heap order: whether the first entry goes before the second.
    typealias Order<Entry> = (Entry, Entry) -> Bool
    /// Told each entry's new index as it moves.
    typealias Placement<Entry> = (Entry, Int) -> Void

    /// Puts `entry` into the hole at `start`, moving it up past every parent it precedes.
    @inline(__always)
    static func siftUp<Entry>(
        _ entry: Entry, from start: Int, in heap: Buffer<Entry>, precedes: Order<Entry>, placed: Placement<Entry>
    ) {
        var hole = start
        while hole > 0 {
            let parent = (hole - 1) / 4
            let parentEntry = heap[parent]
            guard precedes(entry, parentEntry) else { break }
            put(parentEntry, at: hole, in: heap, placed)
            hole = parent
        }
        put(entry, at: hole, in: heap, placed)
    }

    /// Puts `entry` into the hole at `start`, moving it down past every smallest child that precedes it.
    @inline(__always)
    static func siftDown<Entry>(
        _ entry: Entry, from start: Int, in heap: Buffer<Entry>, precedes: Order<Entry>, placed: Placement<Entry>
    ) {
        var hole = start
        let count = heap.count
        while true {
            let firstChild = 4 * hole + 1
            guard firstChild < count else { break }
            var smallest = firstChild
            var child = firstChild + 1
            let end = min(firstChild + 4, count)
            while child < end {
                if precedes(heap[child], heap[smallest]) { smallest = child }
                child += 1
            }
            let smallestEntry = heap[smallest]
            guard precedes(smallestEntry, entry) else { break }
            put(smallestEntry, at: hole, in: heap, placed)
            hole = smallest
        }
        put(entry, at: hole, in: heap, placed)
    }

    /// Fills the hole at `index` (a removed entry's place, with the last entry already taken off the end) with
    /// `last`, moving it whichever way its key calls for.
    @inline(__always)
    static func refill<Entry>(
        at index: Int, with last: Entry, in heap: Buffer<Entry>, precedes: Order<Entry>, placed: Placement<Entry>
    ) {
        if index > 0, precedes(last, heap[(index - 1) / 4]) {
            siftUp(last, from: index, in: heap, precedes: precedes, placed: placed)
        } else {
            siftDown(last, from: index, in: heap, precedes: precedes, placed: placed)
        }
    }

    /// Writes `entry` at `index` and tells the heap's owner where it now sits.
    @inline(__always)
    private static func put<Entry>(
        _ entry: Entry, at index: Int, in heap: Buffer<Entry>, _ placed: Placement<Entry>
    ) {
        heap[index] = entry
        placed(entry, index)
    }
}
