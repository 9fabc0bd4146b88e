import Synchronization

/// What every run-loop item shares: its ``order``, whether it is still valid, and ``invalidate()``; inside RunLoopKit,
/// which loop it belongs to and where it sits in that loop's modes. A loop takes any item in
/// ``Loop/add(_:to:)-(LoopItem,_)``, ``Loop/remove(_:from:)-(LoopItem,_)`` and ``Loop/contains(_:in:)``.
///
/// The items are ``LoopSource`` (CF's version 0 source), ``LoopTimer``, ``LoopObserver`` and the sources built on a
/// file descriptor (``DescriptorBackedSource``: ``FileDescriptorSource``, and RunLoopKitServices' signal, child-exit,
/// file-change and memory-pressure sources). All but observers are ``LoopEventItem``s: they keep runs of their modes
/// going and may carry a rate limit. The class cannot be subclassed outside RunLoopKit; an item is one object, so
/// making one allocates once.
///
/// Threading: ``isValid``, ``invalidate()`` and the owner are safe from any thread. The rest is confined to the owning
/// loop's thread (it is only touched by the loop after the item was bound to it).
open class LoopItem: @unchecked Sendable {  // Unchecked: mutable fields are loop-thread confined, see above.
    /// The loop the item belongs to, as the bits of a retained reference (0 while unbound), released in `deinit`.
    /// Set by the first `add`, and changed only when that loop's thread exited and released its items (then the
    /// item joins another loop). A plain word rather than `AtomicLazyReference<Loop>`, whose generic calls are not
    /// specialised here and look up type metadata on every load.
    private let ownerBits = Atomic<UInt>(0)
    /// Dead loops the item belonged to before, kept retained until the item goes: a thread that read the owner
    /// just before it changed may still be using it (a `signal()` racing the move). Touched only by the thread that
    /// won the move (moves are ordered by the owner's compare-exchange) and by `deinit`.
    nonisolated(unsafe) private var formerOwners: [Unmanaged<Loop>]? = nil

    /// The owner's modes the item is in, with its slot in each.
    @exclusivity(unchecked) var memberships = Memberships()
    /// Whether the item was added to the common pseudo-mode of its owner. Written on the loop's thread; read from
    /// any thread by `contains(_:in: .common)`.
    var isCommon: Bool {
        get { commonFlag.load(ordering: .acquiring) }
        set { commonFlag.store(newValue, ordering: .releasing) }
    }
    /// Bit `i` set while the item is in the owner's mode of id `i` (the first 64 modes): what `contains(_:in:)`
    /// reads from another thread. Written on the loop's thread only, next to ``memberships``.
    let modeMask = Atomic<UInt64>(0)
    /// The item's rate limit (``RateLimiter``) as the bits of a retained reference, 0 until its limit or limit
    /// handler is first set; released in `deinit`. A plain word, like `ownerBits`: `AtomicLazyReference`'s generic
    /// load is not specialised here, and would cost every add a few hundred instructions.
    private let rateLimiterBits = Atomic<UInt>(0)
    /// That limiter while a limit applies, else `nil`: what a pass checks before a handler call (one load and a
    /// branch for an item without a limit). Unmanaged: `rateLimiterBits` holds it for the item's life, and a
    /// reference here, strong or unowned, would make the pass retain and release around the check. Loop thread only.
    @exclusivity(unchecked) final var appliedRateLimiter: Unmanaged<RateLimiter>? = nil

    /// ``appliedRateLimiter`` as a reference. Loop thread only.
    final var activeRateLimiter: RateLimiter? { appliedRateLimiter?.takeUnretainedValue() }

    /// Among items of the same kind handled in the same pass (signalled sources, ready descriptors, observers of one
    /// activity), lower orders are handled first, equal orders in the order they came. A timer keeps its order for
    /// CF parity and descriptions only: like CF, timers fire by fire time.
    public let order: Int
    /// The address of the `#fileID` literal of the place the item was made (its initialiser's `file`), 0 if none; its
    /// line is ``callSiteLine``. Kept apart and packed only when a flight recorder reads them (``callSite``): an
    /// item's making pays two stores.
    final let callSiteFile: UInt

    // The one-byte fields, together, so the item has no padding between words.
    /// Which of the four kinds of item this is, so the loop's generic entry points dispatch with a load and a branch.
    let kind: Kind
    /// Whether the item's handler was made through ``Loop/Isolated`` and so must run on the thread of the loop it is
    /// bound to from birth: it never moves to another loop. Written once by the initialiser, before the item is shared.
    final var isPinned = false
    /// Whether the item may still take part: valid, spent (a one-shot timer that fired, which `setNextFireTime` can revive),
    /// or invalidated for good.
    private let validity = Atomic<UInt8>(Validity.valid)
    /// The value its modes' keep-alive counts reflect. Loop thread only.
    final var countsTowardKeepAlive = true
    /// Backs ``isCommon``.
    private let commonFlag = Atomic<Bool>(false)
    /// Whether the item keeps runs of its modes going, as asked from any thread (``LoopEventItem/keepsRunAlive``).
    let keepsRunAliveRequested = Atomic<Bool>(true)
    /// The line of the place the item was made, at most 65,535 (in the bytes the one-byte fields leave free).
    final let callSiteLine: UInt16

    /// The kinds of item; a ``DescriptorBackedSource`` of any subclass is a `descriptor`.
    enum Kind: UInt8 {
        case source, descriptor, timer, observer
    }

    @inline(__always) init(kind: Kind, order: Int, file: StaticString, line: UInt) {
        self.kind = kind
        self.order = order
        self.callSiteFile = file.hasPointerRepresentation ? UInt(bitPattern: file.utf8Start) : 0
        self.callSiteLine = line > 0xFFFF ? 0xFFFF : UInt16(truncatingIfNeeded: line)
    }

    /// Where the item was made, for the flight recorder. Any thread (both parts are set once, at birth).
    final var callSite: CallSite { CallSite(address: callSiteFile, line: callSiteLine) }

    /// Whether the item can still be added to a loop and called: false once it was invalidated, and for a one-shot
    /// ``LoopTimer`` from the moment it fired until ``LoopTimer/setNextFireTime(_:)`` re-arms it. Safe from any thread.
    public final var isValid: Bool {
        // Sequentially consistent, like `markInvalid()`: a descriptor source's registration and invalidation check
        // each other this way (`Loop.removeRegistration(of:)`). As cheap as an acquiring load on x86-64 and ARMv8.
        validity.load(ordering: .sequentiallyConsistent) == Validity.valid
    }

    /// The values of ``validity``.
    enum Validity {
        /// Valid: it may be added to a loop and its handler called.
        static let valid: UInt8 = 0
        /// A one-shot timer that fired on its own: invalid until re-armed, out of every mode.
        static let spent: UInt8 = 1
        /// Invalidated by `invalidate()` (or by the loop, for a failed descriptor source): for good.
        static let invalidated: UInt8 = 2
    }

    // MARK: package seam (RunLoopKitServices' sources; see Loop+PackageSeam.swift)

    /// Marks the item invalidated for good; answers whether this call ended a valid item (false if it was invalidated
    /// already, or spent: a spent timer is out of every mode already).
    package final func markInvalid() -> Bool {
        validity.exchange(Validity.invalidated, ordering: .sequentiallyConsistent) == Validity.valid
    }

    // MARK: -

    /// Marks a valid item spent (a one-shot timer that fired); answers whether it was valid. Loop thread only.
    final func markSpent() -> Bool {
        validity.compareExchange(
            expected: Validity.valid, desired: Validity.spent, ordering: .sequentiallyConsistent
        ).exchanged
    }

    /// Makes a spent item valid again; answers whether it was spent (false if it is valid or invalidated). Any thread.
    final func reviveIfSpent() -> Bool {
        validity.compareExchange(
            expected: Validity.spent, desired: Validity.valid, ordering: .sequentiallyConsistent
        ).exchanged
    }

    /// Ends the item for good: removes it from every mode of its loop and frees what it holds there. Safe from any
    /// thread, the item's own handler included; invalidating twice does nothing (as in CF).
    ///
    /// After it returns no new handler call starts (one already running on the loop's thread finishes). What each kind
    /// does besides (as CF does): a ``LoopSource``'s cancel handler runs once per mode it was in, on the loop's thread
    /// (at once when called there, else at the loop's next pass), and a signal pending on it is dropped; a ``LoopTimer``
    /// cannot be re-armed any more, and from inside its handler no repeat follows; a descriptor-backed source's
    /// descriptor leaves the loop's epoll set on the calling thread, before this returns, so the descriptor may be
    /// closed right after (invalidate every source of a descriptor before closing it).
    public final func invalidate() {
        guard markInvalid() else { return }
        if kind == .timer {  // On a path of its own, as in `Loop.add(_:to:)`: the kind invalidated most often.
            withOwner { $0.detachEverywhere(.timer(unsafeDowncast(self, to: LoopTimer.self))) }
        } else {
            finishInvalidationOfOtherKinds()
        }
    }

    /// ``invalidate()``'s work for a source, an observer or a descriptor-backed source, once marked invalid (a timer
    /// has its own path there).
    @inline(never)
    private final func finishInvalidationOfOtherKinds() {
        switch kind {
        case .source:
            let source = unsafeDowncast(self, to: LoopSource.self)
            source.signalled.store(false, ordering: .releasing)
            withOwner { $0.detachEverywhere(.source(source)) }
        case .timer:
            break
        case .observer:
            withOwner { $0.detachEverywhere(.observer(unsafeDowncast(self, to: LoopObserver.self))) }
        case .descriptor:
            unsafeDowncast(self, to: DescriptorBackedSource.self).finishInvalidation()
        }
    }

    deinit {
        let bits = ownerBits.load(ordering: .acquiring)
        if bits != 0 { Unmanaged<Loop>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
        if let formerOwners { for former in formerOwners { former.release() } }
        let limiterBits = rateLimiterBits.load(ordering: .acquiring)
        if limiterBits != 0 { Unmanaged<RateLimiter>.fromOpaque(UnsafeRawPointer(bitPattern: limiterBits)!).release() }
    }

    /// The item's rate limiter, `nil` until its limit or limit handler was first set. Any thread.
    final var existingRateLimiter: RateLimiter? {
        let bits = rateLimiterBits.load(ordering: .acquiring)
        guard bits != 0 else { return nil }
        return Unmanaged<RateLimiter>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
    }

    /// The item's rate limiter, made on first use (the first of racing threads wins). Any thread.
    final var rateLimiter: RateLimiter {
        if let existing = existingRateLimiter { return existing }
        let made = Unmanaged.passRetained(RateLimiter())
        let (exchanged, original) = rateLimiterBits.compareExchange(
            expected: 0, desired: UInt(bitPattern: made.toOpaque()), ordering: .acquiringAndReleasing)
        guard !exchanged else { return made.takeUnretainedValue() }
        made.release()
        return Unmanaged<RateLimiter>.fromOpaque(UnsafeRawPointer(bitPattern: original)!).takeUnretainedValue()
    }

    /// The loop the item is bound to, `nil` before its first `add`. Safe from any thread.
    var owner: Loop? {
        let bits = ownerBits.load(ordering: .acquiring)
        guard bits != 0 else { return nil }
        return Unmanaged<Loop>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
    }

    /// Calls `body` with the owner, if the item is bound, without retaining it: the item holds its owner (and any
    /// former owner) until it goes. Safe from any thread.
    @inline(__always)
    final func withOwner(_ body: (Loop) -> Void) {
        let bits = ownerBits.load(ordering: .acquiring)
        guard bits != 0 else { return }
        Unmanaged<Loop>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef(body)
    }

    /// Binds the item to `loop` unless it belongs to another live loop; answers whether it belongs to `loop` now.
    ///
    /// An item whose loop's thread exited (and whose teardown released it) may join another loop, as in CF.
    func bind(to loop: Loop) -> Bool {
        let retained = Unmanaged.passRetained(loop)
        let bits = UInt(bitPattern: retained.toOpaque())
        var current: UInt = 0
        while true {
            let (exchanged, original) = ownerBits.compareExchange(
                expected: current, desired: bits, ordering: .acquiringAndReleasing)
            if exchanged {
                if current != 0 {
                    formerOwners = (formerOwners ?? []) + [Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: current)!)]
                }
                return true
            }
            if original == bits {
                retained.release()
                return true
            }
            let owner = Unmanaged<Loop>.fromOpaque(UnsafeRawPointer(bitPattern: original)!).takeUnretainedValue()
            // A pinned item's handler belongs to its loop's thread: it never moves, not even off a dead loop.
            guard !isPinned, owner.control.lifecycle.load(ordering: .acquiring) == .released else {
                retained.release()
                return false
            }
            current = original  // A dead loop's item: try to take it over.
        }
    }

    /// Records what ``keepsRunAliveRequested`` asks for; the owner, if any, applies it on its thread.
    func requestKeepsRunAlive(_ value: Bool, for item: AnyItem) {
        guard keepsRunAliveRequested.exchange(value, ordering: .acquiringAndReleasing) != value else { return }
        owner?.onLoopThread(with: UncheckedItem(item)) { loop, item in loop.applyKeepsRunAlive(item.item) }
    }

    /// Mirrors a membership change of ``memberships`` in ``modeMask``. Loop thread only.
    func publishMembership(modeID: Int, present: Bool) {
        guard modeID < 64 else { return }
        let bit: UInt64 = 1 << UInt64(modeID)
        let mask = modeMask.load(ordering: .relaxed)
        modeMask.store(present ? mask | bit : mask & ~bit, ordering: .releasing)
    }

    /// Whether the item is in at least one mode of its owner.
    var isInAnyMode: Bool { !memberships.isEmpty }

    func isIn(modeID: Int) -> Bool {
        memberships.contains(modeID: modeID)
    }
}

/// Any of the four kinds of item, so the loop's membership code is written once.
enum AnyItem {
    case source(LoopSource)
    case descriptor(DescriptorBackedSource)
    case timer(LoopTimer)
    case observer(LoopObserver)

    /// `item` as its kind.
    @inline(__always)
    init(_ item: LoopItem) {
        switch item.kind {
        case .timer: self = .timer(unsafeDowncast(item, to: LoopTimer.self))
        case .source: self = .source(unsafeDowncast(item, to: LoopSource.self))
        case .descriptor: self = .descriptor(unsafeDowncast(item, to: DescriptorBackedSource.self))
        case .observer: self = .observer(unsafeDowncast(item, to: LoopObserver.self))
        }
    }

    /// The item as its base class: what the four kinds share.
    var base: LoopItem {
        switch self {
        case .source(let item): item
        case .descriptor(let item): item
        case .timer(let item): item
        case .observer(let item): item
        }
    }

    var identity: ObjectIdentifier {
        switch self {
        case .source(let item): ObjectIdentifier(item)
        case .descriptor(let item): ObjectIdentifier(item)
        case .timer(let item): ObjectIdentifier(item)
        case .observer(let item): ObjectIdentifier(item)
        }
    }
}
