import Glibc
import RunLoopKitSystem
import Synchronization

/// Watches a file descriptor for readiness and calls a handler on the loop's thread (Linux's stand-in for CF's
/// port sources).
///
/// Readiness is level-triggered: as long as the descriptor stays ready, the handler is called on every pass of a
/// run in one of the source's modes, so a handler that does not drain the descriptor is called again. Every
/// ready descriptor is handled in the pass that saw it (CF on Linux handles one per pass). Handling one counts
/// as a handled source for ``Loop/run(in:for:returnAfterSourceHandled:)``.
///
/// What the handler is told is what holds *and* is watched at the moment it is called: a handler earlier in the same
/// pass that changed ``events`` of another source changes that source's report too (as libuv does). Set ``events``
/// to `[]` to watch nothing, hang-up and error included, until it is set again: this is how a C library's "stop
/// watching this socket for now" maps. Edge-triggered and one-shot registrations are not offered: setting `events`
/// to `[]` in the handler gives one-shot behaviour, and level-triggered reports cannot be lost by a handler that
/// reads less than everything (edge-triggered ones can).
///
/// Several sources of one loop may watch the same descriptor (GLib's watch of a socket and the app's, or a C
/// library's input and output callbacks): the loop keeps one registration in its epoll set for them and watches the
/// union of what they watch, and each source is told only what it watches, in passes of its own modes, in ``order``
/// among the others; each has its own handler, ``keepsRunAlive`` and invalidation.
///
/// The source does not own the descriptor: invalidate the source (every source of the descriptor) before closing the
/// descriptor. If the descriptor is closed anyway and its number reused, the old source never sees the new
/// descriptor's events. When the loop notices (a change of ``events``, resuming a parked source, or a new source on
/// the same number), it stops watching, calls the handler of each source that watched it one last time with
/// ``Events/invalid`` in a pass of one of that source's modes, and invalidates them; ``failure`` says why.
///
/// Threading: ``invalidate()``, ``LoopItem/isValid`` and ``events`` (get and set) are safe from any thread; the handler
/// runs on the loop's thread. A source belongs to at most one loop, in any number of its modes.
public final class FileDescriptorSource: LoopItem, @unchecked Sendable {  // Unchecked: loop-thread confined state.
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
        /// and ``FileDescriptorSource/failure`` says why. Never watched; setting it in ``FileDescriptorSource/events``
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
            var events = Epoll.Events.readHangUp  // No array literals of Epoll.Events here: the loop calls this per report.
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

    /// The watched descriptor.
    public let descriptor: CInt
    /// Among descriptors ready in the same pass, lower orders are handled first.
    public let order: Int

    let handler: @Sendable (FileDescriptorSource, Events) -> Void
    /// The bits of ``events``, as last set.
    private let watchedEvents: Atomic<UInt32>

    /// Distinguishes the epoll reports of a registration this source made from any other of the same descriptor number.
    let generation: UInt32
    /// The file the descriptor named when the source was made: an `add` after it was closed (and its number
    /// reused, perhaps by the loop's own epoll set, which the `add` created) is refused with `badDescriptor`, and a
    /// source joins only a registration of its own file.
    let fileIdentity: FileIdentity
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

    /// Creates a source watching `descriptor`.
    ///
    /// - Parameters:
    ///   - descriptor: An open descriptor that supports readiness (a pipe, socket, eventfd, terminal, ...).
    ///   - events: The conditions to watch; default ``Events/readable``.
    ///   - order: Among descriptors ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called on the loop's thread with the conditions that hold.
    /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
    public convenience init(
        descriptor: CInt,
        events: Events = .readable,
        order: Int = 0,
        handler: @escaping @Sendable (Events) -> Void
    ) throws(LoopError) {
        try self.init(descriptor: descriptor, events: events, order: order) { _, ready in handler(ready) }
    }

    /// Creates a source watching `descriptor` whose handler is handed the source itself, so it can change what it
    /// watches (``events``) or invalidate itself without keeping a reference of its own.
    ///
    /// - Parameters:
    ///   - descriptor: An open descriptor that supports readiness (a pipe, socket, eventfd, terminal, ...).
    ///   - events: The conditions to watch; default ``Events/readable``.
    ///   - order: Among descriptors ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called on the loop's thread with the source and the conditions that hold.
    /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
    public init(
        descriptor: CInt,
        events: Events = .readable,
        order: Int = 0,
        handler: @escaping @Sendable (FileDescriptorSource, Events) -> Void
    ) throws(LoopError) {
        guard let identity = FileDescriptorCalls.identity(of: descriptor) else {
            throw LoopError(.badDescriptor, errno: EBADF, message: "descriptor \(descriptor) is not open")
        }
        self.descriptor = descriptor
        self.fileIdentity = identity
        self.watchedEvents = Atomic(events.intersection(Events.watchable).rawValue)
        self.order = order
        self.handler = handler
        var next = Self.generations.add(1, ordering: .relaxed).newValue
        if next == 0 { next = Self.generations.add(1, ordering: .relaxed).newValue }
        self.generation = next
    }

    /// Forgets the loop-thread side of the registration after the loop's thread exited and its epoll set is gone.
    /// (``heldWatch`` names a watch of that loop's poller, which the next loop the source joins recognises as stale,
    /// so it registers the source again.) That loop's thread only, in the teardown.
    func forgetRegistration() {
        watch = nil
    }

    /// Whether the loop narrowed what its epoll set reports for this source's descriptor because it was ready while
    /// none of its modes ran (the registration is shared by the loop's sources of the descriptor). Loop thread only.
    var isParked: Bool { watch?.isParked ?? false }

    /// Whether its rate limit pauses it, so the epoll set is not told what it watches. Loop thread only.
    var isHeldByRateLimit: Bool { activeRateLimiter?.isPaused ?? false }

    /// The tag of this source's epoll reports: generation in the high half, descriptor in the low half.
    var epollTag: UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: descriptor))
    }

    /// The conditions watched: any of ``Events/readable``, ``Events/writable`` and ``Events/priority``
    /// (``Events/error`` and ``Events/hangUp`` are reported with them regardless), or `[]` to watch nothing at all,
    /// hang-up and error included. Safe from any thread.
    ///
    /// Set it to change what the source watches without recreating it: add ``Events/writable`` while output is
    /// pending and take it away once the buffer drained, drop ``Events/readable`` to stop reading from a peer that
    /// does not read its replies, or set `[]` while a C library says "watch nothing for now". Other sources of the
    /// same descriptor keep watching what they watch. On the loop's thread (a
    /// handler, typically) the change applies at once, to the reports of the pass under way too: a source no longer
    /// watching a condition is not told of it. From another thread it applies at the loop's next pass. Other bits
    /// are ignored. If the epoll set refuses the change (the descriptor was closed behind the source's back), the
    /// handler gets ``Events/invalid`` and ``failure`` says why.
    public var events: Events {
        get { Events(rawValue: watchedEvents.load(ordering: .acquiring)) }
        set {
            let watched = newValue.intersection(Events.watchable)
            guard watchedEvents.exchange(watched.rawValue, ordering: .acquiringAndReleasing) != watched.rawValue
            else { return }
            owner?.onLoopThread(with: self) { loop, source in loop.applyWatchedEvents(source) }
        }
    }

    /// Why the loop stopped watching the descriptor, or `nil`: set when it could no longer watch it as asked (it
    /// was closed behind the source's back, so a change of ``events``, a resumed watch or a new source on the same
    /// number found another file or none: ``LoopError/Code/badDescriptor``; or the kernel refused the change, e.g.
    /// `ENOMEM`: ``LoopError/Code/systemCallFailed``). From then on nothing of the source is in the epoll set, so it
    /// cannot spin the loop; its handler gets ``Events/invalid`` once, in a pass of one of its modes, and the source
    /// is invalidated right before that call, so it keeps no run alive. Safe from any thread.
    ///
    /// `events` can be set from any thread and applies on the loop's thread, so a failure cannot be thrown to the
    /// setter: it is recorded here and reported to the handler.
    public var failure: LoopError? { recordedFailure.load()?.error }

    /// Records `error` as ``failure``; answers whether it is the first (the handler is to be told). Loop thread only.
    func recordFailure(_ error: LoopError) -> Bool {
        // Invalidated by its owner first: no failure to report. Only the loop's thread records, so no race here.
        guard isValid, recordedFailure.load() == nil else { return false }
        _ = recordedFailure.storeIfNil(RecordedFailure(error))
        return true
    }

    /// Whether this descriptor source keeps runs of its modes going (default `true`, CF's rule). Set it to `false` for
    /// one that should work while the loop runs for other reasons but never be the reason (libuv's `uv_unref`): a run
    /// whose mode holds only such items returns ``Loop/RunResult/finished`` (on ``Loop/main``, once
    /// ``Loop/mainQueueKeepsRunAlive`` is `false`: by default the main queue keeps the main loop's runs going). Safe
    /// from any thread; from another thread it takes effect at the loop's next pass.
    public var keepsRunAlive: Bool {
        get { keepsRunAliveRequested.load(ordering: .relaxed) }
        set { requestKeepsRunAlive(newValue, for: .descriptor(self)) }
    }

    /// Stops watching for good: removes the source from every mode, and its descriptor from the loop's epoll set
    /// unless another source of the loop still watches it. Safe from any thread.
    ///
    /// After it returns no new handler call starts. Call it before closing the descriptor (when several sources
    /// watch it, invalidate them all first).
    public func invalidate() {
        guard markInvalid() else { return }
        withOwner { owner in
            // Out of the epoll set now, on the calling thread, while the descriptor is still open (the contract): a
            // number closed and reused later, before the loop's next pass, is never mistaken for this one.
            owner.removeRegistration(of: self)
            owner.detachEverywhere(.descriptor(self))
        }
    }
}
