import RunLoopKitSystem
import Synchronization

/// A loop's one timer engine: its ``LoopTimer``s and one-shot callbacks in one ``TimerHeap``, what came due while
/// none of its modes ran in one parked list, the callbacks' slots (``CallbackSlots``), and the sequence that orders
/// equal fire times across both kinds. The loop arms its timerfd for ``firstLatestFireTime`` and takes what is due
/// with ``takeFirstAsDue()``, in heap order. Loop thread only.
///
/// What the loop calls on its pass is `mutating`, getters included: the loop then works on its table in place, where a
/// non-mutating call on a part may be made on a copy that retains each of its fields (Docs/Benchmarks.md, the
/// 2026-11-25 structure change).
struct TimerTable {
    /// Scheduled timers and callbacks, by latest fire time, then sequence.
    private(set) var heap = TimerHeap()
    /// The callbacks' slots: what each runs, its mode, its place.
    private(set) var callbacks = CallbackSlots()
    /// Due timers and callbacks whose modes were not running, in the order they came due; each waits for a run of
    /// one of its modes (``Loop/enter(_:)``). A timer here is ``LoopTimer/State/parked``; a callback's slot is at
    /// ``CallbackSlots/Place/parked``.
    var parked: [TimerEntry] = []
    /// Callbacks scheduled from other threads, by id, while they wait to run (their slot is only known once the
    /// loop's thread applied them).
    var remoteCallbacks: [UInt64: (slot: Int32, generation: UInt32)] = [:]
    /// Callbacks scheduled in ``Loop/Mode/common``: they keep every common mode's runs going.
    var commonCallbackCount = 0
    /// The next tie-breaker among equal fire times: timers and callbacks fire in the order they were scheduled.
    private var nextSequence: UInt64 = 0

    /// Ids of callbacks scheduled from other threads, unique in the process (a loop looks them up in its own
    /// ``remoteCallbacks`` only).
    static let remoteCallbackIDs = Atomic<UInt64>(0)

    /// A new tie-breaker, later than every one handed out before.
    mutating func takeSequence() -> UInt64 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }

    /// The earliest latest fire time of anything scheduled (timer or callback): when the loop must be awake next
    /// for its timers. `nil` when nothing is scheduled.
    var firstLatestFireTime: Int64? {
        mutating get { heap.first?.latestFireTime }
    }

    /// The fire time of the first entry (the one ``takeFirstAsDue()`` takes), or `Int64.max` when nothing is
    /// scheduled. A timer's is read without retaining it.
    @inline(__always)
    var firstFireTime: Int64 {
        mutating get {
            guard let first = heap.first else { return .max }
            if first.isTimer { return first.timerReference._withUnsafeGuaranteedRef { $0.fireTime } }
            return callbacks.slots[Int(first.slot)].fireTime
        }
    }

    // MARK: Timers

    /// Adds `timer` under its current ``LoopTimer/latestFireTime`` and ``LoopTimer/sequence``, which must not change
    /// while it is in the heap (reposition by removing and inserting again).
    @inline(__always)
    mutating func insert(_ timer: LoopTimer) {
        heap.insert(TimerEntry(timer), slots: callbacks.slots.elements)
    }

    /// Removes `timer`, which must be in the heap.
    @inline(__always)
    mutating func remove(_ timer: LoopTimer) {
        let index = Int(timer.heapIndex)
        require(index >= 0 && index < heap.count && heap[index].names(timer), "timer is not in this heap")
        timer.heapIndex = -1
        heap.remove(at: index, slots: callbacks.slots.elements)
    }

    /// Takes a parked `timer` out of the parked list.
    mutating func removeParked(_ timer: LoopTimer) {
        parked.removeAll { $0.names(timer) }
    }

    // MARK: Callbacks

    /// Stores `callback` in a free slot and puts it in the heap; answers its slot and generation.
    @inline(__always)
    mutating func insertCallback(
        fireTime: Int64,
        latestFireTime: Int64,
        sequence: UInt64,
        modeID: Int32,
        remoteID: UInt64,
        site: CallSite = .unknown,
        callback: consuming CallbackSlots.Stored
    ) -> (slot: Int32, generation: UInt32) {
        let (slot, generation) = callbacks.take(
            fireTime: fireTime, modeID: modeID, remoteID: remoteID, site: site, callback: callback)
        heap.insert(
            TimerEntry(slot: slot, generation: generation, latestFireTime: latestFireTime, sequence: sequence),
            slots: callbacks.slots.elements)
        return (slot, generation)
    }

    /// Keeps the call sites of the callbacks scheduled from now on, for the flight recorder; for good, so that a
    /// site read later is never a former callback's.
    mutating func recordCallbackSites() { callbacks.recordsSites = true }

    /// The mode id of the callback an entry names.
    @inline(__always)
    mutating func modeID(of entry: TimerEntry) -> Int32 { callbacks.slots[Int(entry.slot)].modeID }

    /// Cancels the callback in `slot` wherever it is (heap, parked or due) and frees the slot; answers what the loop
    /// books for its end, or `nil` when `slot` of `generation` holds nothing.
    ///
    /// The callback is handed back in `released` (which must be ``CallbackSlots/Stored/nothing``) rather than
    /// released here: releasing a closure may run a deinit of something it captured, which may call into the loop,
    /// and must not do so while this table is being changed.
    mutating func cancel(
        slot: Int32, generation: UInt32, released: inout CallbackSlots.Stored
    ) -> CallbackSlots.Ending? {
        guard callbacks.isScheduled(slot: slot, generation: generation) else { return nil }
        let place = callbacks.slots[Int(slot)].place
        if place >= 0 {
            heap.remove(at: Int(place), slots: callbacks.slots.elements)
        } else if place == CallbackSlots.Place.parked {
            parked.removeAll { !$0.isTimer && $0.slot == slot }
        }
        return callbacks.free(slot, released: &released)
    }

    /// Frees the slot of a due callback (so a cancel from inside the callback finds nothing) and hands what it runs
    /// out in `callback` (which must be ``CallbackSlots/Stored/nothing``); answers what the loop books for its end,
    /// or `nil` if it was cancelled since it was taken from the heap.
    @inline(__always)
    mutating func takeForFiring(_ entry: TimerEntry, callback: inout CallbackSlots.Stored) -> CallbackSlots.Ending? {
        let index = Int(entry.slot)  // Field by field: a copy of the slot would retain its closure.
        guard callbacks.slots[index].place == CallbackSlots.Place.due,
            callbacks.slots[index].generation == entry.generation
        else { return nil }
        return callbacks.free(entry.slot, released: &callback)
    }

    /// Makes room for `capacity` callbacks scheduled at once, beside what the heap holds now: free slots up to that
    /// number, and a heap that holds them, both written once so that their pages are in memory. Scheduling up to that
    /// many then neither grows an array nor faults in a fresh page. O(capacity) once; nothing when there is room.
    mutating func reserve(_ capacity: Int) {
        callbacks.reserve(capacity)
        heap.reserve(heap.count + capacity)
    }

    /// How many callbacks the table holds without growing. For tests.
    var reservedCapacity: Int { Swift.min(callbacks.slots.count, heap.capacity) }

    // MARK: Both kinds

    /// Removes the first entry of the heap (which must exist): a timer leaves with index -1, a callback's slot is
    /// marked due. The caller fires or parks it.
    @inline(__always)
    mutating func takeFirstAsDue() -> TimerEntry {
        let entry = heap.remove(at: 0, slots: callbacks.slots.elements)
        if entry.isTimer {
            entry.timerReference._withUnsafeGuaranteedRef { $0.heapIndex = -1 }
        } else {
            callbacks.slots[Int(entry.slot)].place = CallbackSlots.Place.due
        }
        return entry
    }

    /// Parks a due entry whose modes are not running (a timer's state is the caller's to set).
    mutating func park(_ entry: TimerEntry) {
        if !entry.isTimer { callbacks.slots[Int(entry.slot)].place = CallbackSlots.Place.parked }
        parked.append(entry)
    }

    /// Puts a parked callback's entry back in the heap, under its own key.
    mutating func unpark(callback entry: TimerEntry) {
        heap.insert(entry, slots: callbacks.slots.elements)
    }

    /// Forgets every callback; answers what they ran, for the caller to release once this table is consistent
    /// again (see ``cancel(slot:generation:released:)``). For the loop's teardown, once every timer left its modes
    /// (and so the heap and the parked list).
    mutating func removeAll() -> [CallbackSlots.Stored] {
        var released: [CallbackSlots.Stored] = []
        released.reserveCapacity(callbacks.count)
        for index in 0..<callbacks.slots.count where !CallbackSlots.Place.isFree(callbacks.slots[index].place) {
            var callback = CallbackSlots.Stored.nothing
            _ = callbacks.free(Int32(index), released: &callback)
            released.append(callback)
        }
        heap.removeAll()
        parked.removeAll()
        remoteCallbacks.removeAll()
        commonCallbackCount = 0
        return released
    }

    // MARK: For tests and descriptions

    /// How many timers are in the heap.
    var scheduledTimerCount: Int { heap.all.count { $0.isTimer } }

    /// How many timers are parked.
    var parkedTimerCount: Int { parked.count { $0.isTimer } }

    /// The fire time of the callback due first, if any (a scan: for descriptions).
    var firstCallbackFireTime: Int64? {
        heap.all.filter { !$0.isTimer }.min { $0.precedes($1) }.map { callbacks.slots[Int($0.slot)].fireTime }
    }

    /// Traps if the heap's order or positions are broken, a parked entry is misplaced, or the free list and the
    /// count disagree with the slots. For tests.
    func checkInvariants() {
        heap.checkInvariants(slots: callbacks.slots)
        for entry in parked {
            if entry.isTimer {
                require(entry.timerReference.takeUnretainedValue().state == .parked, "parked timer misplaced")
            } else {
                require(
                    callbacks.slots[Int(entry.slot)].place == CallbackSlots.Place.parked, "parked callback misplaced")
            }
        }
        callbacks.checkFreeList()
    }
}
