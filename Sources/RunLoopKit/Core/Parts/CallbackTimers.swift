import RunLoopKitSystem

/// The loop's one-shot callbacks (``Loop/schedule(at:tolerance:in:_:)``): no object per callback, but a slot in a
/// reusable table and an entry in a 4-ary min-heap of deadlines, so scheduling and cancelling allocate nothing (a
/// closure's own context aside; a C function and its word have none) once the table has grown to the number of
/// callbacks alive at once.
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

    /// A callback's slot: where it is, its mode and what it runs, in 40 bytes. One array of these (not one per
    /// field), so a schedule or a cancel touches one element, and a free slot links to the next free one, so the
    /// free list needs no array of its own. The rare remote id stays out (``CallbackTimers/remoteIDs``).
    ///
    /// The size is what a table growing into fresh memory pays for: each 4 KiB page it first touches costs a page
    /// fault, about 1.3 µs on a KVM guest. With 56-byte slots W3f scheduled in 49 ns, with 40-byte ones in 44.5 ns
    /// (and 24 bytes more cost 6.5 ns).
    struct Slot {
        var generation: UInt32 = 0
        /// The mode's id, ``CallbackTimers/commonModeID`` for the common modes, or ``CallbackTimers/anyModeID``.
        var modeID: Int32 = 0
        var place: Int32 = Place.free
        /// While the slot is free: the next free slot, or -1.
        var nextFree: Int32 = -1
        /// What the callback runs; ``Stored/nothing`` while the slot is free.
        var callback = Stored.nothing
    }

    /// What the loop books when a callback ends (fired or cancelled): its mode's keep-alive count and its remote id.
    /// Plain words, so handing one back costs no value witness.
    struct Ending {
        let modeID: Int32
        let remoteID: UInt64
    }

    /// What a callback runs: a closure, or a C function and the word it is called with (the allocation-free form,
    /// ``Loop/schedule(at:tolerance:in:with:_:)``). An enum, 17 bytes: both payloads are two words, so the slot
    /// holds either in the space of one (three plain fields took 32 bytes).
    struct Stored {
        private enum Kind {
            case nothing
            case closure(@Sendable () -> Void)
            case call(@convention(c) (Int) -> Void, Int)
        }

        private var kind: Kind

        init(_ closure: consuming @escaping @Sendable () -> Void) { kind = .closure(closure) }

        init(function: @convention(c) (Int) -> Void, argument: Int) { kind = .call(function, argument) }

        private init() { kind = .nothing }

        /// Nothing to run: what a free slot holds, and what a callback is taken into.
        static var nothing: Stored { Stored() }

        /// The closure, for a closure callback. For tests.
        var closure: (@Sendable () -> Void)? {
            if case .closure(let closure) = kind { closure } else { nil }
        }

        /// Runs the callback.
        func run() {
            switch kind {
            case .nothing: break
            case .closure(let closure): closure()
            case .call(let function, let argument): function(argument)
            }
        }
    }

    /// The mode id of a callback scheduled in ``Loop/Mode/common``: it fires in whichever common mode runs.
    static let commonModeID: Int32 = -1
    /// The mode id of the loop's own callbacks that fire in whichever mode runs and keep no run alive (the end of a
    /// rate limit's pause, Loop+RateLimits.swift).
    static let anyModeID: Int32 = -2

    /// Both in ``GrowingBuffer``s: growing one moves its pages, not its bytes, and touching one checks no
    /// uniqueness. Shared by reference, so the table must not be copied (the loop holds the one table).
    private let heap = GrowingBuffer<Entry>()
    private let slots = GrowingBuffer<Slot>()
    /// The ids callbacks scheduled from another thread are known by (``Loop/ScheduledCallback``), by slot: rare, so
    /// kept out of the slots.
    private var remoteIDs: [Int32: UInt64] = [:]
    /// The first free slot (linked through ``Slot/nextFree``), or -1.
    private var firstFree: Int32 = -1
    /// Due callbacks whose mode was not running, with their heap entry for when it runs.
    private(set) var parked: [Entry] = []

    /// How many callbacks are scheduled (in the heap, parked or due).
    private(set) var count = 0

    /// How many callbacks the table holds without growing. For tests.
    var reservedCapacity: Int { Swift.min(slots.count, heap.capacity) }

    /// The callback due first, if any.
    var first: Entry? { heap.count > 0 ? heap[0] : nil }

    /// Whether `slot` of `generation` holds a scheduled callback.
    func isScheduled(slot: Int32, generation: UInt32) -> Bool {
        guard slot >= 0, Int(slot) < slots.count else { return false }
        return slots[Int(slot)].generation == generation && slots[Int(slot)].place != Place.free
    }

    func modeID(ofSlot slot: Int32) -> Int32 { slots[Int(slot)].modeID }

    /// Stores `callback` in a free slot and puts it in the heap; answers its slot and generation.
    mutating func insert(
        fireTime: Int64,
        latestFireTime: Int64,
        sequence: UInt64,
        modeID: Int32,
        remoteID: UInt64,
        callback: consuming Stored
    ) -> (slot: Int32, generation: UInt32) {
        let slot: Int32
        if firstFree >= 0 {
            slot = firstFree
            firstFree = slots[Int(slot)].nextFree
        } else {
            slot = Int32(slots.count)
            slots.append(Slot())
        }
        slots[Int(slot)].modeID = modeID
        if remoteID != 0 { remoteIDs[slot] = remoteID }
        slots[Int(slot)].callback = callback
        let generation = slots[Int(slot)].generation
        count += 1
        push(Entry(latestFireTime: latestFireTime, fireTime: fireTime, sequence: sequence, slot: slot))
        return (slot, generation)
    }

    /// Makes room for `capacity` callbacks scheduled at once: free slots up to that number, and a heap that holds
    /// them, both written once so that their pages are in memory. Scheduling up to that many then neither grows an
    /// array (a copy of every entry) nor faults in a fresh page. O(capacity) once; nothing when there is room.
    mutating func reserve(_ capacity: Int) {
        if slots.count < capacity {
            slots.reserve(capacity)
            // The new slots go on the free list lowest index first, ahead of the slots that were free already.
            let firstNew = Int32(slots.count)
            let formerFirstFree = firstFree
            for index in slots.count..<capacity {
                slots.append(Slot(nextFree: index + 1 < capacity ? Int32(index + 1) : formerFirstFree))
            }
            firstFree = firstNew
        }
        if heap.capacity < capacity {
            heap.reserve(capacity)
            let filler = Entry(latestFireTime: 0, fireTime: 0, sequence: 0, slot: 0)
            let live = heap.count
            for _ in live..<capacity { heap.append(filler) }
            for _ in live..<capacity { _ = heap.removeLast() }
        }
    }

    /// Cancels the callback in `slot` wherever it is (heap, parked or due) and frees the slot; answers what the loop
    /// books for its end, or `nil` when `slot` of `generation` holds nothing.
    ///
    /// The callback is handed back in `released` (which must be ``Stored/nothing``) rather than released here:
    /// releasing a closure may run a deinit of something it captured, which may call into the loop, and must not do
    /// so while this table is being changed.
    mutating func cancel(slot: Int32, generation: UInt32, released: inout Stored) -> Ending? {
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

    /// Frees the slot of a due callback (so a cancel from inside the callback finds nothing) and hands what it runs
    /// out in `callback` (which must be ``Stored/nothing``); answers what the loop books for its end, or `nil` if it
    /// was cancelled since it was taken from the heap.
    mutating func takeForFiring(_ entry: Entry, callback: inout Stored) -> Ending? {
        guard slots[Int(entry.slot)].place == Place.due else { return nil }
        return free(entry.slot, released: &callback)
    }

    /// Forgets every callback; answers what they ran, for the caller to release once this table is consistent
    /// again (see ``cancel(slot:generation:released:)``). For the loop's teardown.
    mutating func removeAll() -> [Stored] {
        var released: [Stored] = []
        released.reserveCapacity(count)
        for index in 0..<slots.count where slots[index].place != Place.free {
            var callback = Stored.nothing
            _ = free(Int32(index), released: &callback)
            released.append(callback)
        }
        heap.removeAll()
        parked.removeAll()
        return released
    }

    // MARK: Slot and heap mechanics

    /// Frees `slot`, moving its callback into `released` (``Stored/nothing``, which the slot keeps): no retain or
    /// release of a closure here.
    private mutating func free(_ slot: Int32, released: inout Stored) -> Ending {
        let index = Int(slot)
        let remoteID = remoteIDs.isEmpty ? 0 : remoteIDs.removeValue(forKey: slot) ?? 0
        let ending = Ending(modeID: slots[index].modeID, remoteID: remoteID)
        swap(&released, &slots[index].callback)
        slots[index].place = Place.free
        slots[index].generation &+= 1
        slots[index].nextFree = firstFree
        firstFree = slot
        count -= 1
        return ending
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

    /// Runs `body` with the heap's and the slots' storage: sifting then checks no bounds per level (indices come
    /// from the heap's own arithmetic and the slots its entries name).
    @inline(__always)
    private func withHeapAndSlots(
        _ body: (UnsafeMutableBufferPointer<Entry>, UnsafeMutableBufferPointer<Slot>) -> Void
    ) {
        body(heap.elements, slots.elements)
    }

    /// Traps if any parent sorts after a child or a slot's position is stale. For tests.
    func checkInvariants() {
        for (index, entry) in heap.elements.enumerated() {
            require(slots[Int(entry.slot)].place == Int32(index), "callback heap position is stale")
            if index > 0 { require(!entry.precedes(heap[(index - 1) / 4]), "callback heap order is broken") }
        }
        for entry in parked { require(slots[Int(entry.slot)].place == Place.parked, "parked callback misplaced") }
        var freeCount = 0
        var free = firstFree
        while free >= 0 {
            require(slots[Int(free)].place == Place.free, "a slot on the free list is in use")
            freeCount += 1
            free = slots[Int(free)].nextFree
        }
        require(count == slots.count - freeCount, "callback count is off")
    }
}
