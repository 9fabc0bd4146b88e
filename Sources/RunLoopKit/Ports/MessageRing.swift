import Glibc
import RunLoopKitSystem
import Synchronization

/// The messages of a ``LoopPort``: a bounded ring that stores each message inline, with a sequence number per slot,
/// and an overflow list behind it for the moments the ring is full.
///
/// Threading: ``enqueue(_:)`` and ``close()`` from any thread, concurrently; ``dequeue(upTo:into:)``, ``hasWaiting``
/// and ``discardAll()`` on one consumer thread at a time (the loop's).
///
/// The ring: a producer claims a position by a compare-exchange on ``tail`` when that slot's sequence number says
/// it is free (`sequence == position`), writes the message into the slot, then publishes it (`sequence = position +
/// 1`). The consumer reads a slot when it is published and frees it for the next lap (`sequence = position +
/// capacity`). A producer never waits for another: a claim that loses a race is retried at the new tail, and a slot
/// claimed but not yet published only keeps the consumer from reading past it.
///
/// The overflow: a producer that finds the ring full appends to a mutex-protected list and raises
/// ``overflowing``; while it is raised every producer appends there, so a producer's later messages never overtake
/// its earlier ones. The consumer takes the list only once the ring is empty (`head == tail`: nothing claimed
/// before it is left), delivers it whole, and lowers the flag; the ring takes the next messages. Nothing is dropped;
/// only the overflow allocates, and it keeps its storage for the next time. The list is raw memory
/// (``OverflowList``), not an `Array<Message>`: called from this unspecialised generic code, every method of an array
/// asks the runtime for the array type's metadata, about 330 instructions a call under callgrind.
///
/// Closing: ``close()`` sets a bit in ``tail`` that no claim gets past, and a flag the overflow checks under its lock;
/// from then on every enqueue is refused. ``discardAll()`` then releases what was accepted before.
@usableFromInline
final class MessageRing<Message: Sendable>: @unchecked Sendable {
    // Unchecked Sendable: slots are handed between threads by their sequence numbers; `head` and `taken` are
    // consumer-only; the overflow list is under its lock.

    /// A power of two.
    let capacity: Int
    @usableFromInline let mask: Int
    /// The sequence number of each slot.
    @usableFromInline let sequences: UnsafeMutablePointer<Atomic<Int>>
    /// The messages, initialised between a slot's publication and its read.
    @usableFromInline let slots: UnsafeMutablePointer<Message>
    /// The next position a producer claims, with ``closedBit`` once closed.
    @usableFromInline let tail = Atomic<Int>(0)
    /// The next position the consumer reads. Consumer only.
    @exclusivity(unchecked) private var head = 0
    /// Raised while the overflow list is in use: producers go there instead of to the ring.
    @usableFromInline let overflowing = Atomic<Bool>(false)
    /// Guards ``overflow``; holds `true` once closed.
    @usableFromInline let overflowLock = Locked<Bool>(false)
    /// Messages that found the ring full, oldest first. Under ``overflowLock``.
    @exclusivity(unchecked) @usableFromInline var overflow = OverflowList()
    /// The overflow list the consumer took and is delivering, and how far. Consumer only.
    @exclusivity(unchecked) private var taken = OverflowList()
    @exclusivity(unchecked) private var takenDelivered = 0

    @inlinable static var closedBit: Int { 1 << 62 }

    /// A ring of `capacity` slots, rounded up to a power of two between 2 and 2^20.
    init(capacity: Int) {
        var rounded = 2
        while rounded < min(capacity, 1 << 20) { rounded <<= 1 }
        self.capacity = rounded
        self.mask = rounded - 1
        sequences = .allocate(capacity: rounded)
        for index in 0..<rounded { (sequences + index).initialize(to: Atomic(index)) }
        slots = .allocate(capacity: rounded)
    }

    deinit {
        discardAll()
        if let base = taken.base { base.assumingMemoryBound(to: Message.self).deallocate() }
        sequences.deinitialize(count: capacity)
        sequences.deallocate()
        slots.deallocate()
    }

    // MARK: Producers (any thread)

    /// Stores `message`: in the ring if a slot is free and the overflow is not in use, else in the overflow list;
    /// refuses it once the ring is closed. Never waits for the consumer or another producer, but for the overflow's
    /// lock when the ring is full.
    @inlinable
    func enqueue(_ message: consuming Message) -> Enqueued {
        if !overflowing.load(ordering: .acquiring) {
            let position = claim()
            if position >= 0 {
                (slots + (position & mask)).initialize(to: message)
                sequences[position & mask].store(position + 1, ordering: .releasing)
                return .inRing
            }
            if position == Self.refusedClaim { return .refused }
        }
        return appendToOverflow(message)
    }

    @inlinable static var fullClaim: Int { -1 }
    @inlinable static var refusedClaim: Int { -2 }

    /// Claims the next free position of the ring; answers it, ``fullClaim`` or ``refusedClaim``.
    @inlinable
    func claim() -> Int {
        var position = tail.load(ordering: .relaxed)
        while true {
            if position & Self.closedBit != 0 { return Self.refusedClaim }
            let sequence = sequences[position & mask].load(ordering: .acquiring)
            if sequence == position {
                let (exchanged, original) = tail.weakCompareExchange(
                    expected: position, desired: position + 1, ordering: .relaxed)
                if exchanged { return position }
                position = original
            } else if sequence < position {
                return Self.fullClaim  // The slot still holds the message of the previous lap.
            } else {
                position = tail.load(ordering: .relaxed)  // Another producer claimed it: look again.
            }
        }
    }

    /// Appends `message` to the overflow list under its lock. Inlinable, so it is specialised for the sender's
    /// `Message` (unspecialised, each message cost about 40 instructions more in value-witness calls, measured when
    /// a port's ring stays full); out of line, as the rare path.
    @inlinable @inline(never)
    func appendToOverflow(_ message: consuming Message) -> Enqueued {
        overflowLock.withLock(consuming: message) { closed, message in
            guard !closed else { return .refused }
            if overflow.count == overflow.capacity { grow(&overflow) }
            (overflow.base!.assumingMemoryBound(to: Message.self) + overflow.count).initialize(to: message)
            overflow.count += 1
            overflowing.store(true, ordering: .releasing)
            return .inOverflow
        }
    }

    /// Doubles `list`'s storage (16 messages at first), moving its messages over.
    @usableFromInline @inline(never)
    func grow(_ list: inout OverflowList) {
        let capacity = max(16, list.capacity * 2)
        let base = UnsafeMutablePointer<Message>.allocate(capacity: capacity)
        if let old = list.base?.assumingMemoryBound(to: Message.self) {
            base.moveInitialize(from: old, count: list.count)
            old.deallocate()
        }
        list.base = UnsafeMutableRawPointer(base)
        list.capacity = capacity
    }

    /// Refuses every later ``enqueue(_:)``. Any thread; what was accepted before stays for ``dequeue(upTo:into:)`` or
    /// ``discardAll()``.
    func close() {
        _ = tail.bitwiseOr(Self.closedBit, ordering: .sequentiallyConsistent)
        overflowLock.withLock { $0 = true }
    }

    /// Whether ``close()`` was called. Any thread.
    var isClosed: Bool { tail.load(ordering: .acquiring) & Self.closedBit != 0 }

    // MARK: The consumer (one thread)

    /// Calls `deliver` with up to `limit` messages, oldest first per producer, until it answers `false`; answers how
    /// many it was called with. Consumer only.
    @inline(__always)
    func dequeue(upTo limit: Int, into deliver: (consuming Message) -> Bool) -> Int {
        var delivered = 0
        var more = true
        while more && delivered < limit {
            if takenDelivered < taken.count {
                let message = (taken.base!.assumingMemoryBound(to: Message.self) + takenDelivered).move()
                takenDelivered += 1
                more = deliver(message)
            } else if sequences[head & mask].load(ordering: .acquiring) == head + 1 {
                let message = (slots + (head & mask)).move()
                sequences[head & mask].store(head + capacity, ordering: .releasing)
                head += 1
                more = deliver(message)
            } else if takeOverflowIfRingIsEmpty() {
                continue  // Nothing delivered yet: the list taken is delivered from the next turn.
            } else {
                break
            }
            delivered += 1
        }
        if takenDelivered == taken.count && takenDelivered > 0 {
            taken.count = 0  // All moved out: the storage is kept for the next take.
            takenDelivered = 0
        }
        return delivered
    }

    /// Takes the overflow list when the ring is empty and the list is in use; answers whether it took any. Taken
    /// earlier, it would overtake ring messages its producers sent before. Consumer only.
    @inline(never)
    private func takeOverflowIfRingIsEmpty() -> Bool {
        guard overflowing.load(ordering: .acquiring) else { return false }
        guard tail.load(ordering: .acquiring) & ~Self.closedBit == head else { return false }
        taken.count = 0  // Delivered whole already: `dequeue` looks at the ring only then.
        takenDelivered = 0
        return overflowLock.withLock { _ in
            // Looked at again under the lock: a producer that read `overflowing` before it was raised can claim a
            // ring slot after the look above and then append its next message here. Every message in the list was
            // appended under this lock, after its producer's earlier claims, so `tail` now counts those claims.
            guard tail.load(ordering: .acquiring) & ~Self.closedBit == head else { return false }
            let full = overflow
            overflow = taken  // Empty, with its storage, for the next messages that find the ring full.
            taken = full
            overflowing.store(false, ordering: .releasing)
            return taken.count > 0
        }
    }

    /// Whether a message waits (published in the ring, claimed there, or in the overflow). Consumer only.
    var hasWaiting: Bool {
        takenDelivered < taken.count || tail.load(ordering: .acquiring) & ~Self.closedBit != head
            || overflowing.load(ordering: .acquiring)
    }

    /// Releases every message accepted and not delivered, waiting for producers that claimed a slot to fill it.
    /// Consumer only, after ``close()`` (or with no producer left).
    func discardAll() {
        let end = tail.load(ordering: .acquiring) & ~Self.closedBit
        while head != end {
            while sequences[head & mask].load(ordering: .acquiring) != head + 1 { sched_yield() }
            (slots + (head & mask)).deinitialize(count: 1)
            sequences[head & mask].store(head + capacity, ordering: .releasing)
            head += 1
        }
        if takenDelivered < taken.count {
            let undelivered = taken.count - takenDelivered
            (taken.base!.assumingMemoryBound(to: Message.self) + takenDelivered).deinitialize(count: undelivered)
        }
        taken.count = 0
        takenDelivered = 0
        var left = OverflowList()
        overflowLock.withLock { _ in
            overflowing.store(false, ordering: .releasing)
            left = overflow
            overflow = OverflowList()
        }
        if let base = left.base?.assumingMemoryBound(to: Message.self) {
            base.deinitialize(count: left.count)  // Released here, outside the lock: a message's deinit may send again.
            base.deallocate()
        }
    }
}

/// What ``MessageRing/enqueue(_:)`` did with a message. (Outside the generic class, so that comparing it costs no
/// generic call.)
@usableFromInline
enum Enqueued {
    /// Stored in the ring.
    case inRing
    /// Stored in the overflow list (the ring was full, or the overflow is in use).
    case inOverflow
    /// Refused: the ring is closed. The message was released.
    case refused
}

/// Messages in memory of their own, oldest first, for ``MessageRing``'s overflow: typed by the ring
/// (`assumingMemoryBound(to: Message.self)`), so the list itself is not generic and costs no metadata look-up.
@usableFromInline
struct OverflowList {
    /// `count` initialised messages, room for `capacity`; `nil` until the first message.
    @usableFromInline var base: UnsafeMutableRawPointer?
    @usableFromInline var count = 0
    @usableFromInline var capacity = 0

    @usableFromInline init() {}
}
