import RunLoopKitSystem
import Synchronization

/// Where an item or block was made, in one word: the address of its `#fileID` literal in the low 48 bits and its
/// line in the high 16 (lines above 65,535 read as 65,535). A block queued with its call site grows by this word
/// alone, not by a `StaticString` and a `UInt` (24 bytes); the literal is a C string in the binary, NUL-terminated
/// and never freed, so the address is all a reader needs.
@usableFromInline
struct CallSite: Equatable, Sendable {
    /// The packed bits; 0 for no known site.
    @usableFromInline
    let bits: UInt

    /// No known site (an actor job, the main queue, an item made by a path that does not pass one).
    static let unknown = CallSite(bits: 0)

    /// A site from the bits a recorder stored.
    @usableFromInline
    init(bits: UInt) {
        self.bits = bits
    }

    /// The site `file`:`line`, or ``unknown`` when the literal is not stored as a pointer or lies above 48 bits.
    /// Inlinable: a public call that takes `#fileID` and `#line` packs them where it is called.
    @inlinable @inline(__always)
    init(file: StaticString, line: UInt) {
        guard file.hasPointerRepresentation else {
            bits = 0  // Unknown.
            return
        }
        let address = UInt(bitPattern: file.utf8Start)
        bits = address >> 48 == 0 ? address | (Swift.min(line, 0xFFFF) << 48) : 0
    }

    /// The site a ``LoopItem`` keeps in two parts: the literal's address and its line.
    @inline(__always)
    init(address: UInt, line: UInt16) {
        bits = address >> 48 == 0 ? address | UInt(line) << 48 : 0
    }

    /// The file's name as `#fileID` spelt it (`Module/File.swift`), `nil` for ``unknown``.
    var file: String? {
        let address = bits & 0xFFFF_FFFF_FFFF
        guard let pointer = UnsafePointer<CChar>(bitPattern: address) else { return nil }
        return String(cString: pointer)
    }

    /// The line, 0 for ``unknown``.
    var line: Int { Int(bits >> 48) }
}

/// A loop's flight recorder: the last passes and the callouts made in each, kept in one fixed block of memory sized
/// when it is enabled (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``). Written by the loop's thread alone,
/// without a lock; copied out by any thread (``copy(now:)``).
///
/// Layout: `passCapacity` pass records in a ring, each a header of four words (number, start, duration, callout
/// count with the dropped count in its high half) and `calloutCapacity` callout slots of four words (call site,
/// kind, start, duration). Every word is an atomic, stored and loaded relaxed where no order is needed (plain moves
/// on x86-64), so the writer's stores and the readers' loads never race in the memory model or for ThreadSanitizer.
///
/// Why a sequence lock per record and not a lock: the writer stores a few words per callout on the loop's fast path
/// and must never wait for a reader; readers are rare (a stall report, a snapshot on demand) and may retry. A
/// record's number is its sequence: the writer stores 0 before it reuses a record (then a releasing fence), writes
/// the header, and stores the new number (releasing). A callout appends its slot and then publishes the count
/// (releasing); its duration is a word of its own, -1 until the callout returns. A reader loads the number
/// (acquiring), the count (acquiring), the slots, then the number again after an acquiring fence: a record reused
/// meanwhile shows another number, and the copy is dropped. So a reader sees passes and callouts in progress, as a
/// stall report needs, and never a mix of two passes.
///
/// Threading: the `begin`/`end` calls on the loop's thread only; ``copy(now:)`` from any thread.
// Unchecked: the loop-thread fields are confined to that thread; the ring is atomics.
final class FlightRecorder: @unchecked Sendable {
    /// How many passes and how many callouts per pass the ring keeps.
    let passCapacity: Int
    let calloutCapacity: Int
    /// The ring: `passCapacity` records of `recordWords` atomic words each. Allocated once, freed in `deinit`.
    private let words: UnsafeMutablePointer<Atomic<Int64>>
    private let recordWords: Int
    /// The number the recorder's first pass gets, less one: it differs from recorder to recorder in its low 32 bits
    /// (``numbering``), which tokens carry, so a callout begun under a replaced recorder does not match a slot of its
    /// successor.
    private let base: Int64

    /// The next pass number. Loop thread only.
    @exclusivity(unchecked) private var nextNumber: Int64
    /// The record of the pass in progress, -1 outside passes. Loop thread only.
    @exclusivity(unchecked) private var current = -1

    /// The words of a pass header and of a callout slot.
    private static let headerWords = 4
    private static let slotWords = 4
    /// The largest ring that may be asked for, in each dimension.
    static let maximumPasses = 1 << 16
    static let maximumCallouts = 1 << 12

    /// Ranges of pass numbers, one per recorder made.
    private static let numbering = Atomic<Int64>(0)

    /// A ring of `passes` passes of up to `calloutsPerPass` callouts each (both at least 1, at most the maximums).
    init(passes: Int, calloutsPerPass: Int) {
        passCapacity = passes
        calloutCapacity = calloutsPerPass
        recordWords = Self.headerWords + calloutsPerPass * Self.slotWords
        let count = passes * recordWords
        words = .allocate(capacity: count)
        for index in 0..<count { (words + index).initialize(to: Atomic(0)) }
        // Far apart in the low 32 bits (a multiplicative hash of the recorder's ordinal), and never negative.
        base = (Self.numbering.wrappingAdd(1, ordering: .relaxed).newValue &* 0x9E37_79B9) & 0x7FFF_FFFF
        nextNumber = base + 1
    }

    deinit {
        words.deinitialize(count: passCapacity * recordWords)
        words.deallocate()
    }

    @inline(__always)
    private func word(_ index: Int) -> UnsafeMutablePointer<Atomic<Int64>> {
        words + index
    }

    // MARK: Writing (loop thread only)

    /// A pass begins at `startedAt`: takes the oldest record. Answers the record of the pass it is nested in (-1 for
    /// none), for ``endPass(_:endedAt:startedAt:)`` to go back to.
    @inline(never)  // Out of line: a pass with the recorder off keeps its code and registers as they were.
    func beginPass(startedAt: Int64) -> Int {
        let outer = current
        let number = nextNumber
        nextNumber += 1
        let record = Int((number - base - 1) % Int64(passCapacity))
        let header = record * recordWords
        word(header).pointee.store(0, ordering: .relaxed)  // Being rewritten: readers drop what they copy.
        atomicMemoryFence(ordering: .releasing)
        word(header + 1).pointee.store(startedAt, ordering: .relaxed)
        word(header + 2).pointee.store(-1, ordering: .relaxed)
        word(header + 3).pointee.store(0, ordering: .relaxed)
        word(header).pointee.store(number, ordering: .releasing)
        current = record
        return outer
    }

    /// The pass in progress ends at `endedAt`; the pass it was nested in, `outer`, is in progress again.
    @inline(never)  // Out of line: a pass with the recorder off keeps its code and registers as they were.
    func endPass(_ outer: Int, endedAt: Int64) {
        if current >= 0 {
            let header = current * recordWords
            let started = word(header + 1).pointee.load(ordering: .relaxed)
            word(header + 2).pointee.store(Swift.max(0, endedAt - started), ordering: .releasing)
        }
        // A mark made by a recorder this one replaced (enabled during the pass) may name no record here.
        current = outer < passCapacity ? outer : -1
    }

    /// A callout of `kind` made at `site` begins now; answers the token ``endCallout(_:)`` takes, -1 when it is
    /// not recorded (outside passes, or the pass has no slot left: then it is counted as dropped).
    @inline(never)  // Out of line: a pass with the recorder off keeps its code and registers as they were.
    func beginCallout(_ kind: Loop.FlightRecording.Callout.Kind, at site: CallSite) -> Int {
        guard current >= 0 else { return -1 }
        let header = current * recordWords
        let counts = word(header + 3).pointee.load(ordering: .relaxed)
        let count = Int(counts & 0xFFFF_FFFF)
        guard count < calloutCapacity else {
            word(header + 3).pointee.store(counts + (1 << 32), ordering: .releasing)
            return -1
        }
        let slot = header + Self.headerWords + count * Self.slotWords
        word(slot).pointee.store(Int64(bitPattern: UInt64(site.bits)), ordering: .relaxed)
        word(slot + 1).pointee.store(Int64(kind.rawValue), ordering: .relaxed)
        word(slot + 2).pointee.store(MonotonicClock.now(), ordering: .relaxed)
        word(slot + 3).pointee.store(-1, ordering: .relaxed)
        word(header + 3).pointee.store(counts + 1, ordering: .releasing)
        // The slot's word index (below 2^31: 65,536 records of 16,388 words at most), and the low 32 bits of the
        // number of the pass it belongs to, above it: a token is never negative.
        let number = word(header).pointee.load(ordering: .relaxed)
        return slot | Int(truncatingIfNeeded: number & 0xFFFF_FFFF) << 31
    }

    /// The callout `token` names returned: its duration is stored, unless its record was reused meanwhile (a run
    /// nested in it went round the whole ring).
    @inline(never)  // Out of line: a pass with the recorder off keeps its code and registers as they were.
    func endCallout(_ token: Int) {
        let slot = token & (1 << 31 - 1)
        guard slot < passCapacity * recordWords else { return }  // A token of a recorder this one replaced.
        let header = slot - (slot % recordWords)
        guard word(header).pointee.load(ordering: .relaxed) & 0xFFFF_FFFF == Int64(token >> 31),
            word(slot + 3).pointee.load(ordering: .relaxed) < 0
        else { return }
        let started = word(slot + 2).pointee.load(ordering: .relaxed)
        word(slot + 3).pointee.store(Swift.max(0, MonotonicClock.now() - started), ordering: .releasing)
    }

    // MARK: Reading (any thread)

    /// Copies the passes the ring holds, oldest first; a pass or callout still in progress counts up to `now`.
    /// Allocates the copy; never waits for the loop's thread (a record being rewritten while it is copied is left
    /// out).
    func copy(now: Int64) -> [Loop.FlightRecording.Pass] {
        var passes: [Loop.FlightRecording.Pass] = []
        passes.reserveCapacity(passCapacity)
        for record in 0..<passCapacity {
            if let pass = copyRecord(record, now: now) { passes.append(pass) }
        }
        passes.sort { $0.number < $1.number }
        return passes
    }

    private func copyRecord(_ record: Int, now: Int64) -> Loop.FlightRecording.Pass? {
        let header = record * recordWords
        let number = word(header).pointee.load(ordering: .acquiring)
        guard number != 0 else { return nil }
        let counts = word(header + 3).pointee.load(ordering: .acquiring)
        let started = word(header + 1).pointee.load(ordering: .relaxed)
        let duration = word(header + 2).pointee.load(ordering: .acquiring)
        let count = Swift.min(Int(counts & 0xFFFF_FFFF), calloutCapacity)
        var callouts: [Loop.FlightRecording.Callout] = []
        callouts.reserveCapacity(count)
        for index in 0..<count {
            let slot = header + Self.headerWords + index * Self.slotWords
            let site = CallSite(bits: UInt(bitPattern: Int(word(slot).pointee.load(ordering: .relaxed))))
            let kind = word(slot + 1).pointee.load(ordering: .relaxed)
            let start = word(slot + 2).pointee.load(ordering: .relaxed)
            let length = word(slot + 3).pointee.load(ordering: .acquiring)
            callouts.append(
                Loop.FlightRecording.Callout(
                    kind: Loop.FlightRecording.Callout.Kind(rawValue: UInt8(truncatingIfNeeded: kind)) ?? .block,
                    site: site, startedAt: start, duration: length < 0 ? Swift.max(0, now - start) : length,
                    isInProgress: length < 0))
        }
        atomicMemoryFence(ordering: .acquiring)
        guard word(header).pointee.load(ordering: .relaxed) == number else { return nil }
        return Loop.FlightRecording.Pass(
            number: Int(number - base), startedAt: started,
            duration: duration < 0 ? Swift.max(0, now - started) : duration,
            isInProgress: duration < 0, callouts: callouts, droppedCallouts: Int(counts >> 32))
    }
}
