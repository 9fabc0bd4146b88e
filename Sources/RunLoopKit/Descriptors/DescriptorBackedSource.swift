import Glibc
import RunLoopKitSystem
import Synchronization

/// A source whose events come from a file descriptor the loop watches for readiness: the one base of
/// ``FileDescriptorSource`` (a descriptor of yours) and of the sources RunLoopKitServices builds on a descriptor of
/// their own (signals on an eventfd, child exits on a pidfd, file changes on an inotify instance, memory pressure on a
/// PSI trigger).
///
/// Every such source has the same life and the same properties, whatever it watches: it is added to, removed from and
/// found in a loop's modes with ``Loop/add(_:to:)-(LoopItem,_)``, ``Loop/remove(_:from:)-(LoopItem,_)`` and
/// ``Loop/contains(_:in:)``; it is handled, among the descriptors ready in the same pass, in ``LoopItem/order``; it
/// may carry a rate limit and stop keeping runs alive (``LoopEventItem``); ``LoopItem/invalidate()`` ends it for good;
/// and when the loop can no longer watch its descriptor, it is invalidated and ``failure`` says why. While it is in a
/// loop's modes, the loop keeps it alive (the caller need not hold it), until it is invalidated or the loop's thread
/// exits.
///
/// Readiness is level-triggered: as long as the descriptor stays ready, the source is handled on every pass of a run
/// in one of its modes. Every ready descriptor is handled in the pass that saw it (CF on Linux handles one per pass),
/// and handling one counts as a handled source for ``Loop/run(in:for:returnAfterSourceHandled:)``.
///
/// The class is open only so RunLoopKit's products can build on it: its initialiser is not public, so no other module
/// can make a subclass.
///
/// Threading: ``failure``, ``LoopItem/isValid`` and ``LoopItem/invalidate()`` are safe from any thread; handlers run
/// on the loop's thread. A source belongs to at most one loop, in any number of its modes.
open class DescriptorBackedSource: LoopItem, LoopEventItem, @unchecked Sendable {
    // Unchecked Sendable: the mutable state is loop-thread confined (see each field).
    /// Readiness conditions.
    public struct Events: OptionSet, Hashable, Sendable, CustomStringConvertible {
        /// The bits.
        public let rawValue: UInt32

        /// Creates an event set from its bits.
        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        /// Data can be read (or a listening socket can accept).
        public static let readable = Events(rawValue: 1 << 0)
        /// Data can be written.
        public static let writable = Events(rawValue: 1 << 1)
        /// An error is pending on the descriptor; always reported, whether asked for or not.
        public static let error = Events(rawValue: 1 << 2)
        /// The peer hung up (or shut down writing); always reported, whether asked for or not.
        public static let hangUp = Events(rawValue: 1 << 3)
        /// Exceptional data is ready (`EPOLLPRI`): a socket's urgent data, a PSI trigger's pressure event, a sysfs
        /// attribute that changed, a pseudo-terminal's packet-mode state. Watched only when asked for.
        public static let priority = Events(rawValue: 1 << 4)
        /// The loop can no longer watch the descriptor (it was closed behind the source's back, or the kernel
        /// refused a change of what it watches): the last call the handler gets. The source is invalidated by then,
        /// and ``DescriptorBackedSource/failure`` says why. Never watched; setting it in ``FileDescriptorSource/events``
        /// has no effect.
        public static let invalid = Events(rawValue: 1 << 5)

        /// The conditions a source can ask to watch.
        static let watchable: Events = [.readable, .writable, .priority]

        /// The member names joined by `|`.
        public var description: String {
            let names: [(Events, String)] = [
                (.readable, "readable"), (.writable, "writable"), (.error, "error"), (.hangUp, "hangUp"),
                (.priority, "priority"), (.invalid, "invalid"),
            ]
            let present = names.filter { contains($0.0) }.map(\.1)
            return present.isEmpty ? "[]" : present.joined(separator: "|")
        }

        /// What the epoll set is told for a source watching these conditions. Nothing watched: a one-shot
        /// registration with no events, which reports at most one hang-up or error (epoll always reports those)
        /// and then stays silent until changed; the report is not passed on (see ``reported(by:)``).
        var epollEvents: Epoll.Events {
            guard !isDisjoint(with: Self.watchable) else { return .oneShot }
            // No array literals of Epoll.Events here: the loop calls this per report.
            var events = Epoll.Events.readHangUp
            if contains(.readable) { events.insert(.input) }
            if contains(.writable) { events.insert(.output) }
            if contains(.priority) { events.insert(.priority) }
            return events
        }

        init(epoll events: Epoll.Events) {
            var result: Events = []
            if events.contains(.input) { result.insert(.readable) }
            if events.contains(.output) { result.insert(.writable) }
            if events.contains(.priority) { result.insert(.priority) }
            if events.contains(.error) { result.insert(.error) }
            if !events.isDisjoint(with: Epoll.Events.hangUp.union(.readHangUp)) { result.insert(.hangUp) }
            self = result
        }

        /// The part of a report (`self`) a source watching `watched` is told: what it watches, plus hang-up and
        /// error unless it watches nothing. Empty: no handler call.
        func reported(by watched: Events) -> Events {
            guard !watched.isDisjoint(with: Self.watchable) else { return [] }
            return intersection(watched.union([.error, .hangUp]))
        }
    }

    // MARK: package seam (RunLoopKitServices' sources subclass it; see Loop+PackageSeam.swift): `watchedDescriptor`
    // here, the initialiser, `finishInvalidation()` and `withOwnedDescriptor(_:)` below. The other `package` members
    // serve the core alone today (Docs/PackageSurface.txt).

    /// The descriptor the loop watches.
    package let watchedDescriptor: CInt
    /// What the loop calls on its thread with the source and what holds (masked with what it watches); a function of
    /// the subclass that captures nothing, so the source is not kept alive by itself.
    package let callout: @Sendable (DescriptorBackedSource, Events) -> Void
    /// What the source does when it is invalidated, beyond leaving its loop, on the invalidating thread (after its
    /// descriptor left the loop's epoll set): a subclass withdraws from a signal, closes its own descriptor, ...
    package let invalidationStep: (@Sendable (DescriptorBackedSource) -> Void)?
    /// The bits of ``watchedEvents``, as last set.
    private let watchedBits: Atomic<UInt32>
    /// For a source that owns its descriptor: the descriptor until invalidation, closed once the last holder (a
    /// handler call or a registration under way) lets go. `nil` for a descriptor of the user's.
    private let owned: Locked<OwnedDescriptor?>?

    /// Distinguishes the epoll reports of a registration this source made from any other of the same descriptor number.
    let generation: UInt32
    /// The file the descriptor named when the source was made: an `add` after it was closed (and its number
    /// reused, perhaps by the loop's own epoll set, which the `add` created) is refused with `badDescriptor`, and a
    /// source joins only a registration of its own file.
    let fileIdentity: FileIdentity
    /// For a descriptor of the user's that names an anonymous-inode file (an eventfd, timerfd, signalfd, epoll set,
    /// ..., which all share one device and inode, so ``fileIdentity`` cannot tell them apart): a duplicate of it, kept
    /// while the source is in no epoll set, so an `add` can ask the kernel whether the number still names that file
    /// (``namesItsFile()``). Dropped once a registration holds the file in its place (a duplicate kept then would
    /// keep the file, and so its epoll entry, alive after the caller closed it), taken again when that registration
    /// goes with its loop's thread, closed at invalidation. `nil` for other sources, and when no descriptor was left
    /// to duplicate (then the device and inode are all an `add` checks).
    private let fileReference: Locked<OwnedDescriptor?>?
    /// The registration this source holds in its owner's epoll set (counted in its ``DescriptorWatch/users``), from
    /// its first `add` until it is invalidated: read and written only under the owner's registration lock
    /// (``Poller/withRegistrations(_:)``). One of another poller (a loop whose thread exited) is stale: the source is
    /// registered afresh in the loop it joins next.
    nonisolated(unsafe) var heldWatch: DescriptorWatch?
    /// The registration whose source list this source is in, from its first join on the loop's thread until it
    /// leaves. Loop thread only.
    nonisolated(unsafe) var watch: DescriptorWatch?
    /// Why the loop invalidated the source, when it did: set once, allocated only then.
    private let recordedFailure = AtomicLazyReference<RecordedFailure>()

    private final class RecordedFailure: Sendable {
        let error: LoopError
        init(_ error: LoopError) { self.error = error }
    }

    private static let generations = Atomic<UInt32>(0)

    /// Makes a source watching `descriptor` for `events`, handled by `callout`; for the subclasses in RunLoopKit's
    /// products. With `ownsDescriptor`, the source closes the descriptor once it is invalidated and nothing uses it
    /// any more (or when it is released), and the caller must not close it; the descriptor is the source's even when
    /// this throws.
    /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
    package init(
        descriptor: CInt,
        events: Events,
        order: Int,
        ownsDescriptor: Bool = false,
        callout: @escaping @Sendable (DescriptorBackedSource, Events) -> Void,
        invalidationStep: (@Sendable (DescriptorBackedSource) -> Void)? = nil,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) {
        guard let identity = FileDescriptorCalls.identity(of: descriptor) else {
            if ownsDescriptor { FileDescriptorCalls.close(descriptor) }
            throw LoopError(.badDescriptor, errno: EBADF, message: "descriptor \(descriptor) is not open")
        }
        self.owned = ownsDescriptor ? Locked(OwnedDescriptor(descriptor)) : nil
        self.watchedDescriptor = descriptor
        self.fileIdentity = identity
        let isAnonymous = !ownsDescriptor && FileDescriptorCalls.isAnonymousInode(descriptor)
        self.fileReference =
            isAnonymous ? Locked((try? FileDescriptorCalls.duplicate(descriptor)).map(OwnedDescriptor.init)) : nil
        self.watchedBits = Atomic(events.intersection(Events.watchable).rawValue)
        self.callout = callout
        self.invalidationStep = invalidationStep
        var next = Self.generations.add(1, ordering: .relaxed).newValue
        if next == 0 { next = Self.generations.add(1, ordering: .relaxed).newValue }
        self.generation = next
        super.init(kind: .descriptor, order: order, file: file, line: line)
    }

    /// Forgets the loop-thread side of the registration as the loop's thread exits, before its epoll set `epoll` is
    /// closed, and takes the duplicate an anonymous-inode file's next `add` checks against again. (``heldWatch`` names
    /// a watch of that loop's poller, which the next loop the source joins recognises as stale, so it registers the
    /// source again.) That loop's thread only, in the teardown.
    func forgetRegistration(in epoll: CInt) {
        watch = nil
        retakeFileReference(watchedBy: epoll)
    }

    /// Whether the descriptor still names the file the source was made for: the same device and inode, and for an
    /// anonymous-inode file the same open file as the kept duplicate (``fileReference``), as `kcmp(2)` says. Where the
    /// kernel will not compare (kcmp not built or not allowed) the device and inode decide. Any thread; add time.
    func namesItsFile() -> Bool {
        guard FileDescriptorCalls.identity(of: watchedDescriptor) == fileIdentity else { return false }
        guard let reference = fileReference?.withLock({ $0 }) else { return true }
        let same = try? FileDescriptorCalls.namesSameFile(watchedDescriptor, as: reference.descriptor)
        return same ?? true
    }

    /// Closes the kept duplicate once the source's registration holds the file instead (``Loop/register(_:)``).
    /// Under the owner's registration lock.
    func dropFileReference() {
        fileReference?.withLock { $0 = nil }
    }

    /// Takes a duplicate of the descriptor again when the registration in `epoll` goes with its loop's thread, if
    /// the number still names the file that set watches for it (otherwise the source's next `add` finds the file
    /// gone: with no duplicate and nothing to compare, it checks the device and inode). That loop's thread, before the
    /// set is closed.
    private func retakeFileReference(watchedBy epoll: CInt) {
        guard let fileReference, isValid else { return }
        let entry = try? FileDescriptorCalls.compare(watchedDescriptor, of: watchedDescriptor, in: epoll)
        guard entry == .sameFile, let copy = try? FileDescriptorCalls.duplicate(watchedDescriptor) else { return }
        fileReference.withLock { $0 = OwnedDescriptor(copy) }
    }

    /// Whether the loop narrowed what its epoll set reports for this source's descriptor because it was ready while
    /// none of its modes ran (the registration is shared by the loop's sources of the descriptor). Loop thread only.
    var isParked: Bool { watch?.isParked ?? false }

    /// Whether its rate limit pauses it, so the epoll set is not told what it watches. Loop thread only.
    var isHeldByRateLimit: Bool { activeRateLimiter?.isPaused ?? false }

    /// The tag of this source's epoll reports: generation in the high half, descriptor in the low half.
    var epollTag: UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: watchedDescriptor))
    }

    /// The conditions watched, as last set. Any thread.
    package final var watchedEvents: Events { Events(rawValue: watchedBits.load(ordering: .acquiring)) }

    /// Changes the conditions watched; the owner, if any, tells its epoll set on its thread (at once there). Any thread.
    package final func setWatchedEvents(_ events: Events) {
        let watched = events.intersection(Events.watchable)
        guard watchedBits.exchange(watched.rawValue, ordering: .acquiringAndReleasing) != watched.rawValue else {
            return
        }
        owner?.onLoopThread(with: self) { loop, source in loop.applyWatchedEvents(source) }
    }

    /// Why the loop stopped watching the descriptor, or `nil`: set when it could no longer watch it as asked (it
    /// was closed behind the source's back, so a change of what it watches, a resumed watch or a new source on the same
    /// number found another file or none: ``LoopError/Code/badDescriptor``; or the kernel refused the change, e.g.
    /// `ENOMEM`: ``LoopError/Code/systemCallFailed``). From then on nothing of the source is in the epoll set, so it
    /// cannot spin the loop, and the source is invalid, so it keeps no run alive. A ``FileDescriptorSource``'s handler
    /// is told once, with ``Events/invalid``, in a pass of one of its modes. Safe from any thread.
    ///
    /// What a source watches can change from any thread and applies on the loop's thread, so a failure cannot be
    /// thrown to the caller: it is recorded here and reported to the handler.
    public final var failure: LoopError? { recordedFailure.load()?.error }

    /// Records `error` as ``failure``; answers whether it is the first (the handler is to be told). Loop thread only.
    func recordFailure(_ error: LoopError) -> Bool {
        // Invalidated by its owner first: no failure to report. Only the loop's thread records, so no race here.
        guard isValid, recordedFailure.load() == nil else { return false }
        _ = recordedFailure.storeIfNil(RecordedFailure(error))
        return true
    }

    /// Invalidation's steps after the item was marked invalid (``LoopItem/invalidate()``, or a subclass that ends
    /// itself on the loop's thread): out of the epoll set now, on the calling thread, while the descriptor is still
    /// open (the contract), so a number closed and reused later, before the loop's next pass, is never mistaken for
    /// this one; then out of every mode; then the subclass's own step. Any thread.
    package final func finishInvalidation() {
        withOwner { owner in
            owner.removeRegistration(of: self)
            owner.detachEverywhere(.descriptor(self))
        }
        invalidationStep?(self)
        fileReference?.withLock { $0 = nil }
        owned?.withLock { $0 = nil }  // Closed now, or once the last handler call or registration using it returns.
    }

    /// Calls `body` with the source's own descriptor, held open until `body` returns; `nil` without calling it once
    /// invalidation let the descriptor go. For a source that owns its descriptor; any thread.
    package final func withOwnedDescriptor<Result, Failure: Error>(
        _ body: (CInt) throws(Failure) -> Result
    ) throws(Failure) -> Result? {
        guard let held = owned?.withLock({ $0 }) else { return nil }
        defer { withExtendedLifetime(held) {} }
        return try body(held.descriptor)
    }

    /// Whether the descriptor may be registered: a descriptor of the user's always (its `add` checks it is still
    /// the same file), an owned one until invalidation let it go. Holds an owned one open while it is registered.
    func withRegistrableDescriptor(_ body: () throws(LoopError) -> Void) throws(LoopError) {
        guard owned != nil else { return try body() }
        let registered: Void? = try withOwnedDescriptor { _ throws(LoopError) in try body() }
        if registered == nil { throw LoopError(.invalidated, message: "an invalidated item cannot be added to a loop") }
    }
}
