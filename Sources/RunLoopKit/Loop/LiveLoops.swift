import Synchronization

/// Every live loop of the process, for the `fork()` child handler (``ForkGuard``): in the child it marks each loop
/// made before the fork terminated, so the lifecycle check every post already makes refuses work for them, at no
/// cost to the posts.
///
/// Lock-free, and allocation-free on the reading side: the child handler runs where a lock a parent thread held at
/// the fork stays held for good. A loop joins when made (``insert(_:)``) and leaves when freed (``remove(_:)``).
///
/// A slot holds 0 (never used, or claimed and not filled yet), a loop's address (even), or, while free, a link to
/// the next free slot (`(next + 1) << 1 | 1`, odd; `next + 1 == 0` ends the list). Free slots form a Treiber stack
/// whose head packs a tag (high 32 bits, bumped by every change, against ABA) and the top slot + 1 (low 32 bits, 0
/// when empty). Slots are never freed, so reading one is always safe; a stale read only makes a compare-and-swap
/// fail. Every state between two atomic steps is consistent, so a child forked at any moment reads a sound table.
enum LiveLoops {
    /// Slots per chunk; chunks are allocated as the number of live loops grows.
    static let chunkSize = 1024
    /// Chunks at most: 1,048,576 loops alive at once (each holds three descriptors: far beyond any descriptor limit).
    static let chunkLimit = 1024
    /// How many loops may be alive at once.
    static var capacity: Int { chunkSize * chunkLimit }

    /// The chunks' addresses (0: not allocated yet), `chunkLimit` of them. Made before the child handler is installed
    /// (``ForkGuard``), so the handler never runs an initialiser. Unsafe only to the compiler: every element is atomic.
    nonisolated(unsafe) static let chunks: UnsafeMutablePointer<Atomic<UInt>> = {
        let table = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: chunkLimit)
        for index in 0..<chunkLimit { (table + index).initialize(to: Atomic(0)) }
        return table
    }()
    /// Slots handed out by bumping; each slot below it was claimed once (its chunk is missing only if the chunk's
    /// allocation failed, and then the slot was never used).
    private static let highWater = Atomic<Int>(0)
    /// The free slots' stack: tag << 32 | (top slot + 1).
    private static let freeHead = Atomic<UInt64>(0)

    /// Takes a slot for a loop being made, empty until ``publish(_:in:)``; answers it, for ``remove(_:)``, or -1
    /// when the table is full. Any thread.
    static func reserve() -> Int {
        var slot = popFree()
        if slot < 0 {
            let bumped = highWater.add(1, ordering: .sequentiallyConsistent).oldValue
            guard bumped < capacity else { return -1 }
            ensureChunk(bumped / chunkSize)
            slot = bumped
        }
        slotAt(slot).pointee.store(0, ordering: .sequentiallyConsistent)  // Reserved: visited by no `forEach`.
        return slot
    }

    /// Registers `loop` (an unretained address) in `slot`, an answer of ``reserve()``. Any thread.
    static func publish(_ loop: UnsafeMutableRawPointer, in slot: Int) {
        slotAt(slot).pointee.store(UInt(bitPattern: loop), ordering: .sequentiallyConsistent)
    }

    /// Unregisters the loop in `slot` (an answer of ``reserve()``; -1 does nothing), before the loop is freed. Any
    /// thread.
    static func remove(_ slot: Int) {
        guard slot >= 0 else { return }
        var head = freeHead.load(ordering: .sequentiallyConsistent)
        while true {
            slotAt(slot).pointee.store(
                UInt(UInt32(truncatingIfNeeded: head)) << 1 | 1, ordering: .sequentiallyConsistent)
            let next = ((head >> 32) &+ 1) << 32 | UInt64(slot + 1)
            let (exchanged, original) = freeHead.weakCompareExchange(
                expected: head, desired: next, ordering: .sequentiallyConsistent)
            if exchanged { return }
            head = original
        }
    }

    /// Calls `body` with every registered loop's address. Takes no lock and allocates nothing: for the `fork()` child
    /// handler, where only the calling thread exists (a loop inserted or removed concurrently may or may not be
    /// visited).
    static func forEach(_ body: (UnsafeMutableRawPointer) -> Void) {
        let end = min(highWater.load(ordering: .sequentiallyConsistent), capacity)
        var chunk = 0
        while chunk * chunkSize < end {
            defer { chunk += 1 }
            guard let slots = chunkAt(chunk) else { continue }
            for offset in 0..<chunkSize {
                let value = slots[offset].load(ordering: .sequentiallyConsistent)
                if value & 1 == 0, let loop = UnsafeMutableRawPointer(bitPattern: value) { body(loop) }
            }
        }
    }

    private static func chunkAt(_ chunk: Int) -> UnsafeMutablePointer<Atomic<UInt>>? {
        UnsafeMutablePointer(bitPattern: chunks[chunk].load(ordering: .sequentiallyConsistent))
    }

    /// Slot `slot`, whose chunk exists (the slot was handed out).
    private static func slotAt(_ slot: Int) -> UnsafeMutablePointer<Atomic<UInt>> {
        chunkAt(slot / chunkSize)! + slot % chunkSize
    }

    /// Allocates chunk `chunk` unless another thread did.
    private static func ensureChunk(_ chunk: Int) {
        guard chunkAt(chunk) == nil else { return }
        let fresh = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: chunkSize)
        for index in 0..<chunkSize { (fresh + index).initialize(to: Atomic(0)) }
        let (exchanged, _) = chunks[chunk].compareExchange(
            expected: 0, desired: UInt(bitPattern: fresh), ordering: .sequentiallyConsistent)
        if !exchanged { fresh.deallocate() }  // Another thread's won; nothing else saw this one.
    }

    /// Takes a free slot off the stack; -1 when none is free.
    private static func popFree() -> Int {
        var head = freeHead.load(ordering: .sequentiallyConsistent)
        while UInt32(truncatingIfNeeded: head) != 0 {
            let slot = Int(UInt32(truncatingIfNeeded: head)) - 1
            let link = slotAt(slot).pointee.load(ordering: .sequentiallyConsistent)
            // Not a link: another thread took the slot meanwhile, so the head changed and the exchange fails.
            let nextPlusOne = link & 1 == 1 ? UInt64(UInt32(truncatingIfNeeded: link >> 1)) : 0
            let next = ((head >> 32) &+ 1) << 32 | nextPlusOne
            let (exchanged, original) = freeHead.weakCompareExchange(
                expected: head, desired: next, ordering: .sequentiallyConsistent)
            if exchanged { return slot }
            head = original
        }
        return -1
    }
}
