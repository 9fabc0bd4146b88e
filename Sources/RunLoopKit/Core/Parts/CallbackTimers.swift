/// The loop's one-shot callbacks (``Loop/schedule(at:tolerance:in:_:)``): no object per callback, but a slot in a
/// reusable table and an entry in a 4-ary min-heap of deadlines, so scheduling and cancelling allocate nothing (the
/// callback's own closure context aside) once the table has grown to the number of callbacks alive at once.
///
/// A slot is named by its index and a generation that changes each time the slot is freed, so a stale
/// ``Loop/ScheduledCallback`` never reaches a later callback that reuses the slot. Insert, cancel and taking the
/// first are O(log n); the heap entry carries the key, so sifting (``FourAryHeap``) reads only the heap's own array
/// and writes each moved entry's position back into its slot. Loop thread only.
struct CallbackTimers {
    /// A scheduled callback's place in the heap: its key (latestFireTime fire time, then sequence for FIFO among equal
    /// times, shared with ``LoopTimer``s) and its fire time.
    struct Entry {
        let latestFireTime: Int64
        let fireTime: Int64
        let sequence: UInt64
        let slot: Int32

        func precedes(_ other: Entry) -> Bool {
            latestFireTime != other.latestFireTime ? latestFireTime < other.latestFireTime : sequence < other.sequence
        }

        /// Whether this callback fires before `timer` (same key as the timer heap's).
        func precedes(_ timer: LoopTimer) -> Bool {
            latestFireTime != timer.latestFireTime ? latestFireTime < timer.latestFireTime : sequence < timer.sequence
        }
    }

    /// Where a slot's callback is: a heap index (0 or more), or one of the states below.
    enum Place {
        static let free: Int32 = -1
        /// Due while its mode was not running; waits in ``parked``.
        static let parked: Int32 = -2
        /// Taken from the heap by the pass about to fire it.
        static let due: Int32 = -3
    }

    struct Slot {
        var generation: UInt32 = 0
        /// The mode's id, ``CallbackTimers/commonModeID`` for the common modes, or ``CallbackTimers/anyModeID``.
        var modeID: Int32 = 0
        var place: Int32 = Place.free
        /// The id a callback scheduled from another thread is known by (``Loop/ScheduledCallback``), else 0.
        var remoteID: UInt64 = 0
    }

    /// A callback's closure as stored. Wrapped in a struct: an array of bare function values keeps them in the
    /// generic (most abstract) form, which takes a thunk, allocated per store, to convert into.
    struct Stored {
        let run: @Sendable () -> Void
    }

    /// The mode id of a callback scheduled in ``Loop/Mode/common``: it fires in whichever common mode runs.
    static let commonModeID: Int32 = -1
    /// The mode id of the loop's own callbacks that fire in whichever mode runs and keep no run alive (the end of a
    /// rate limit's pause, Loop+RateLimits.swift).
    static let anyModeID: Int32 = -2

    private var heap: [Entry] = []
    private var slots: [Slot] = []
    /// The closures, beside the slots so the heap's write-backs touch small slots only.
    private var callbacks: [Stored?] = []
    private var freeSlots: [Int32] = []
    /// Due callbacks whose mode was not running, with their heap entry for when it runs.
    private(set) var parked: [Entry] = []

    /// How many callbacks are scheduled (in the heap, parked or due).
    private(set) var count = 0

    /// The callback due first, if any.
    var first: Entry? { heap.first }

    /// Whether `slot` of `generation` holds a scheduled callback.
    func isScheduled(slot: Int32, generation: UInt32) -> Bool {
        guard slot >= 0, Int(slot) < slots.count else { return false }
        let state = slots[Int(slot)]
        return state.generation == generation && state.place != Place.free
    }

    func modeID(ofSlot slot: Int32) -> Int32 { slots[Int(slot)].modeID }

    /// Stores `callback` in a free slot and puts it in the heap; answers its slot and generation.
    mutating func insert(
        fireTime: Int64,
        latestFireTime: Int64,
        sequence: UInt64,
        modeID: Int32,
        remoteID: UInt64,
        callback: consuming @escaping @Sendable () -> Void
    ) -> (slot: Int32, generation: UInt32) {
        let slot: Int32
        if let reused = freeSlots.popLast() {
            slot = reused
            callbacks[Int(slot)] = Stored(run: callback)
        } else {
            slot = Int32(slots.count)
            slots.append(Slot())
            callbacks.append(Stored(run: callback))
        }
        slots[Int(slot)].modeID = modeID
        slots[Int(slot)].remoteID = remoteID
        count += 1
        push(Entry(latestFireTime: latestFireTime, fireTime: fireTime, sequence: sequence, slot: slot))
        return (slot, slots[Int(slot)].generation)
    }

    /// Cancels the callback in `slot` wherever it is (heap, parked or due) and frees the slot; answers what the slot
    /// held (its mode and remote id), or `nil` when `slot` of `generation` holds nothing.
    ///
    /// The closure is handed back in `released` rather than released here: releasing it may run a deinit of
    /// something it captured, which may call into the loop, and must not do so while this table is being changed.
    /// (Plain values in and out: an optional struct holding the closure would be copied through value witnesses.)
    mutating func cancel(slot: Int32, generation: UInt32, released: inout Stored?) -> Slot? {
        guard isScheduled(slot: slot, generation: generation) else { return nil }
        let place = slots[Int(slot)].place
        if place >= 0 {
            removeFromHeap(at: Int(place))
        } else if place == Place.parked {
            parked.removeAll { $0.slot == slot }
        }
        return free(slot, released: &released)
    }

    /// Removes the first entry of the heap (which must exist) and marks its slot due.
    mutating func takeFirstAsDue() -> Entry {
        let entry = heap[0]
        removeFromHeap(at: 0)
        slots[Int(entry.slot)].place = Place.due
        return entry
    }

    /// Parks a due callback whose mode is not running.
    mutating func park(_ entry: Entry) {
        slots[Int(entry.slot)].place = Place.parked
        parked.append(entry)
    }

    /// Puts back in the heap each parked callback for which `runsNow` answers true (given its mode id).
    mutating func unpark(where runsNow: (Int32) -> Bool) {
        var index = 0
        while index < parked.count {
            let entry = parked[index]
            if runsNow(slots[Int(entry.slot)].modeID) {
                parked.remove(at: index)
                push(entry)
            } else {
                index += 1
            }
        }
    }

    /// Frees the slot of a due callback (so a cancel from inside the callback finds nothing) and hands its closure
    /// out in `callback`; answers what the slot held, or `nil` if it was cancelled since it was taken from the heap.
    mutating func takeForFiring(_ entry: Entry, callback: inout Stored?) -> Slot? {
        guard slots[Int(entry.slot)].place == Place.due else { return nil }
        return free(entry.slot, released: &callback)
    }

    /// Forgets every callback; answers the closures, for the caller to release once this table is consistent
    /// again (see ``cancel(slot:generation:)``). For the loop's teardown.
    mutating func removeAll() -> [Stored?] {
        for index in slots.indices where slots[index].place != Place.free {
            slots[index].generation &+= 1
            slots[index].place = Place.free
            freeSlots.append(Int32(index))
        }
        heap.removeAll()
        parked.removeAll()
        count = 0
        var released = [Stored?](repeating: nil, count: callbacks.count)
        swap(&released, &callbacks)
        return released
    }

    // MARK: Slot and heap mechanics

    private mutating func free(_ slot: Int32, released: inout Stored?) -> Slot {
        let state = slots[Int(slot)]
        released = callbacks[Int(slot)].take()
        slots[Int(slot)].place = Place.free
        slots[Int(slot)].generation &+= 1
        freeSlots.append(slot)
        count -= 1
        return state
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        let hole = heap.count - 1
        withHeapAndSlots { heap, slots in
            FourAryHeap.siftUp(
                entry, from: hole, in: heap, precedes: { $0.precedes($1) },
                placed: { slots[Int($0.slot)].place = Int32($1) })
        }
    }

    private mutating func removeFromHeap(at index: Int) {
        let last = heap.removeLast()
        guard index < heap.count else { return }
        withHeapAndSlots { heap, slots in
            FourAryHeap.refill(
                at: index, with: last, in: heap, precedes: { $0.precedes($1) },
                placed: { slots[Int($0.slot)].place = Int32($1) })
        }
    }

    /// Runs `body` with the heap's and the slots' storage: sifting then checks neither uniqueness nor bounds per
    /// level (indices come from the heap's own arithmetic and the slots its entries name).
    @inline(__always)
    private mutating func withHeapAndSlots(
        _ body: (UnsafeMutableBufferPointer<Entry>, UnsafeMutableBufferPointer<Slot>) -> Void
    ) {
        heap.withUnsafeMutableBufferPointer { heap in
            slots.withUnsafeMutableBufferPointer { slots in body(heap, slots) }
        }
    }

    /// Traps if any parent sorts after a child or a slot's position is stale. For tests.
    func checkInvariants() {
        for (index, entry) in heap.enumerated() {
            require(slots[Int(entry.slot)].place == Int32(index), "callback heap position is stale")
            if index > 0 { require(!entry.precedes(heap[(index - 1) / 4]), "callback heap order is broken") }
        }
        for entry in parked { require(slots[Int(entry.slot)].place == Place.parked, "parked callback misplaced") }
        require(count == slots.count - freeSlots.count, "callback count is off")
    }
}
