/// One entry of the loop's timer heap (``TimerHeap``): the key both kinds of timed work are ordered by, and what it
/// names, a ``LoopTimer`` or a one-shot callback's slot (``CallbackSlots``), in 24 bytes.
///
/// The key is the latest fire time (fire time plus tolerance), then a sequence number the loop hands out to timers
/// and callbacks alike, so equal times fire in the order they were scheduled, whatever their kind. The entry keeps a
/// copy of the key, so sifting compares entries in the heap's own array without following a reference.
///
/// `payload` is tagged by its lowest bit: 0, the address of a ``LoopTimer`` (objects are at least 16-byte aligned),
/// held unretained (its modes hold it, see ``TimerHeap``); 1, a callback's slot in bits 1–31 and the slot's
/// generation in bits 32–63, so an entry names one callback only, never a later one that reuses its slot. A plain
/// word: copying an entry costs no reference counting and no switch. Loop thread only.
struct TimerEntry {
    let latestFireTime: Int64
    let sequence: UInt64
    let payload: UInt64

    /// An entry for `timer` under its current ``LoopTimer/latestFireTime`` and ``LoopTimer/sequence``.
    @inline(__always)
    init(_ timer: LoopTimer) {
        latestFireTime = timer.latestFireTime
        sequence = timer.sequence
        payload = UInt64(UInt(bitPattern: Unmanaged.passUnretained(timer).toOpaque()))
    }

    /// An entry for the callback in `slot` of `generation`.
    @inline(__always)
    init(slot: Int32, generation: UInt32, latestFireTime: Int64, sequence: UInt64) {
        self.latestFireTime = latestFireTime
        self.sequence = sequence
        payload = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: slot)) << 1 | 1
    }

    /// Whether the entry names a ``LoopTimer`` (else a callback's slot).
    @inline(__always)
    var isTimer: Bool { payload & 1 == 0 }

    /// The timer, unretained; only for an entry that ``isTimer``.
    @inline(__always)
    var timerReference: Unmanaged<LoopTimer> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: UInt(payload)).unsafelyUnwrapped)
    }

    /// The callback's slot; only for an entry that is not ``isTimer``.
    @inline(__always)
    var slot: Int32 { Int32(truncatingIfNeeded: payload >> 1 & 0x7FFF_FFFF) }

    /// The callback slot's generation when it was scheduled; only for an entry that is not ``isTimer``.
    @inline(__always)
    var generation: UInt32 { UInt32(truncatingIfNeeded: payload >> 32) }

    /// Whether `timer` is what this entry names.
    @inline(__always)
    func names(_ timer: LoopTimer) -> Bool {
        payload == UInt64(UInt(bitPattern: Unmanaged.passUnretained(timer).toOpaque()))
    }

    /// The heap order: earlier latest fire time first, then earlier sequence.
    @inline(__always)
    func precedes(_ other: TimerEntry) -> Bool {
        latestFireTime != other.latestFireTime ? latestFireTime < other.latestFireTime : sequence < other.sequence
    }
}
