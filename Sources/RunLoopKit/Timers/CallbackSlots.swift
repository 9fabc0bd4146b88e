import RunLoopKitSystem

/// The slots of the loop's one-shot callbacks (``Loop/schedule(at:tolerance:in:_:file:line:)``): no object per callback, but a
/// slot in a reusable table, so scheduling and cancelling allocate nothing (a closure's own context aside; a C
/// function and its word have none) once the table has grown to the number of callbacks alive at once. The
/// callbacks' places in time are entries of the loop's one ``TimerHeap``, beside the ``LoopTimer``s.
///
/// A slot is named by its index and a generation that changes each time the slot is freed, so a stale
/// ``Loop/ScheduledCallback`` never reaches a later callback that reuses the slot. Loop thread only.
struct CallbackSlots {
    /// Where a slot's callback is: a heap index (0 or more), one of the states below, or, at ``freeBase`` and below,
    /// free (then the place also links to the next free slot, so the free list needs no field of its own).
    enum Place {
        /// Due while its mode was not running; waits in the table's parked list.
        static let parked: Int32 = -1
        /// Taken from the heap by the pass about to fire it.
        static let due: Int32 = -2
        /// The place of a free slot that is the last of the free list; `freeBase - 1 - n` links to slot `n`.
        static let freeBase: Int32 = -3

        /// The place of a free slot followed on the free list by `next` (-1: none).
        @inline(__always)
        static func free(next: Int32) -> Int32 { freeBase - 1 - next }

        /// The slot after a free one whose place is `place`, or -1.
        @inline(__always)
        static func next(afterFree place: Int32) -> Int32 { freeBase - 1 - place }

        @inline(__always)
        static func isFree(_ place: Int32) -> Bool { place <= freeBase }
    }

    /// A callback's slot: what it runs, its mode, where it is and its fire time, in 40 bytes. One array of these
    /// (not one per field), so a schedule or a cancel touches one element. What it runs comes first: the 4-byte
    /// fields fill the 7 bytes after its 17 (the enum's tag byte ends it). The rare remote id stays out
    /// (``CallbackSlots/remoteIDs``).
    ///
    /// The size is what a table growing into fresh memory pays for: each 4 KiB page it first touches costs a page
    /// fault, about 1.3 µs on a KVM guest. With 56-byte slots W3f scheduled in 49 ns, with 40-byte ones in 44.5 ns
    /// (and 24 bytes more cost 6.5 ns).
    struct Slot {
        /// What the callback runs; ``Stored/nothing`` while the slot is free.
        var callback = Stored.nothing
        var generation: UInt32 = 0
        /// The mode's id, ``CallbackSlots/commonModeID`` for the common modes, or ``CallbackSlots/anyModeID``.
        var modeID: Int32 = 0
        var place = Place.free(next: -1)
        /// When the callback may fire (its heap entry holds the latest fire time).
        var fireTime: Int64 = 0
    }

    /// What the loop books when a callback ends (fired or cancelled): its mode's keep-alive count and its remote id.
    /// Plain words, so handing one back costs no value witness.
    struct Ending {
        let modeID: Int32
        let remoteID: UInt64
    }

    /// What a callback runs: a closure, or a C function and the word it is called with (the allocation-free form,
    /// ``Loop/schedule(at:tolerance:in:with:_:file:line:)``). An enum, 17 bytes: both payloads are two words, so the slot
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

    /// In a ``GrowingBuffer``: growing it moves its pages, not its bytes, and touching it checks no uniqueness.
    /// Shared by reference, so the table must not be copied (the loop holds the one table).
    let slots = GrowingBuffer<Slot>()
    /// The ids callbacks scheduled from another thread are known by (``Loop/ScheduledCallback``), by slot: rare, so
    /// kept out of the slots.
    private var remoteIDs: [Int32: UInt64] = [:]
    /// Where each slot's callback was scheduled (``CallSite`` bits), kept once ``recordsSites`` is set: the flight
    /// recorder's, not the slot's, so a table that never records pays nothing for them (the slot stays 40 bytes).
    private var sites: [UInt] = []
    /// Whether ``take(fireTime:modeID:remoteID:site:callback:)`` keeps its site. Set when the flight recorder is
    /// first enabled and never cleared: a slot's site then always belongs to its present callback.
    var recordsSites = false
    /// The first free slot (linked through ``Slot/place``), or -1.
    private var firstFree: Int32 = -1

    /// How many callbacks are scheduled (in the heap, parked or due).
    private(set) var count = 0

    /// Whether `slot` of `generation` holds a scheduled callback.
    func isScheduled(slot: Int32, generation: UInt32) -> Bool {
        guard slot >= 0, Int(slot) < slots.count else { return false }
        return slots[Int(slot)].generation == generation && !Place.isFree(slots[Int(slot)].place)
    }

    /// Stores `callback` in a free slot, not yet placed; answers its slot and generation.
    @inline(__always)
    mutating func take(
        fireTime: Int64, modeID: Int32, remoteID: UInt64, site: CallSite, callback: consuming Stored
    ) -> (slot: Int32, generation: UInt32) {
        let slot: Int32
        if firstFree >= 0 {
            slot = firstFree
            firstFree = Place.next(afterFree: slots[Int(slot)].place)
        } else {
            slot = Int32(slots.count)
            slots.append(Slot())
        }
        let index = Int(slot)
        slots[index].modeID = modeID
        slots[index].fireTime = fireTime
        if remoteID != 0 { remoteIDs[slot] = remoteID }
        if recordsSites { keep(site, for: slot) }
        slots[index].callback = callback
        count += 1
        return (slot, slots[index].generation)
    }

    /// Stores `site` as `slot`'s. Out of line: only a loop whose flight recorder was ever on comes here.
    @inline(never)
    private mutating func keep(_ site: CallSite, for slot: Int32) {
        if sites.count < slots.count { sites.append(contentsOf: repeatElement(0, count: slots.count - sites.count)) }
        sites[Int(slot)] = site.bits
    }

    /// Where the callback in `slot` was scheduled; ``CallSite/unknown`` if it was scheduled before sites were kept.
    /// Valid until the slot is taken again (so also while a callback freed for firing runs).
    func site(ofSlot slot: Int32) -> CallSite {
        Int(slot) < sites.count ? CallSite(bits: sites[Int(slot)]) : .unknown
    }

    /// Makes `capacity` slots exist, the new ones free, lowest index first, ahead of the slots that were free
    /// already; written once, so that their pages are in memory. Nothing when there are that many.
    mutating func reserve(_ capacity: Int) {
        guard slots.count < capacity else { return }
        slots.reserve(capacity)
        let firstNew = Int32(slots.count)
        let formerFirstFree = firstFree
        for index in slots.count..<capacity {
            slots.append(Slot(place: Place.free(next: index + 1 < capacity ? Int32(index + 1) : formerFirstFree)))
        }
        firstFree = firstNew
    }

    /// Frees `slot`, moving its callback into `released` (``Stored/nothing``, which the slot keeps): no retain or
    /// release of a closure here. Answers what the loop books for the callback's end.
    @inline(__always)
    mutating func free(_ slot: Int32, released: inout Stored) -> Ending {
        let index = Int(slot)
        let remoteID = remoteIDs.isEmpty ? 0 : remoteIDs.removeValue(forKey: slot) ?? 0
        let ending = Ending(modeID: slots[index].modeID, remoteID: remoteID)
        swap(&released, &slots[index].callback)
        slots[index].place = Place.free(next: firstFree)
        slots[index].generation &+= 1
        firstFree = slot
        count -= 1
        return ending
    }

    /// Traps if the free list and the count disagree with the slots. For tests.
    func checkFreeList() {
        var freeCount = 0
        var free = firstFree
        while free >= 0 {
            require(Place.isFree(slots[Int(free)].place), "a slot on the free list is in use")
            freeCount += 1
            free = Place.next(afterFree: slots[Int(free)].place)
        }
        require(count == slots.count - freeCount, "callback count is off")
    }
}
