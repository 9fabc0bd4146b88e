import RunLoopKitSystem

/// One registration of a descriptor number in a loop's epoll set, shared by every ``DescriptorBackedSource`` of the
/// loop that watches the open file the number names: the set is told the union of what they watch, and each report
/// goes to those of them in the running mode.
///
/// Threading, by field:
/// - `descriptor`, `tag`, `identity`, `pollerID`: immutable.
/// - `users` and `removal`: guarded by the poller's registration lock (``Poller/withRegistrations(_:)``), any thread.
/// - `registeredEvents`: written with that lock held (by the add that made the watch, then by the loop's thread);
///   read on the loop's thread, which learns of the watch only through a change posted after it was made.
/// - the source list and `isParked`: the loop's thread only.
final class DescriptorWatch: @unchecked Sendable {  // Unchecked: each field's guard is listed above.
    typealias Events = DescriptorBackedSource.Events

    /// Why a registration left the epoll set.
    enum Removal {
        /// Its last source released it (invalidated), taking the number out of the set.
        case released
        /// A new registration of the number succeeded, so the kernel had dropped this one: its file was closed
        /// behind its sources' backs.
        case superseded
        /// The kernel refused a change of what it reports; the number was taken out of the set.
        case failed(LoopError)
        /// The loop's thread exited and its epoll set was closed.
        case closed
    }

    let descriptor: CInt
    /// The tag of its reports: that of the source whose `EPOLL_CTL_ADD` made it, kept for the watch's whole life
    /// (a generation belongs to one source, and a source to at most one registration per loop, so the tag stays
    /// unique to this registration even after that source left).
    let tag: UInt64
    /// The file the number named when the watch was made: a source joins only a watch of its own file.
    let identity: FileIdentity
    /// The poller whose set holds it: a watch of another (dead) loop's poller is no registration here.
    let pollerID: ObjectIdentifier

    /// How many sources hold the registration (registered and not yet released). Poller lock.
    var users = 1
    /// `nil` while the registration is in the set, else why it left. Poller lock.
    var removal: Removal?

    /// What the set was last told for it. See the type's threading notes.
    var registeredEvents: Events
    /// Whether the registration is narrowed (parked) to what the running mode's sources watch, because it reported
    /// something no source in the running mode watched (``Loop/park(_:claimed:)``). Loop thread only.
    var isParked = false

    /// The sources that joined it on the loop's thread, in no particular order: most watches have one, kept inline.
    /// Loop thread only.
    private(set) var first: DescriptorBackedSource?
    private(set) var others: [DescriptorBackedSource] = []
    /// How many sources it holds: `first` plus `others`, kept so that dispatch need not touch `others` for a
    /// registration of one source.
    private(set) var count = 0

    init(descriptor: CInt, tag: UInt64, identity: FileIdentity, pollerID: ObjectIdentifier, events: Events) {
        self.descriptor = descriptor
        self.tag = tag
        self.identity = identity
        self.pollerID = pollerID
        self.registeredEvents = events
    }

    /// Whether no source has joined it on the loop's thread (or all left).
    var isEmpty: Bool { first == nil }

    /// Enters `source`, which must not be in it yet. Loop thread only.
    func insert(_ source: DescriptorBackedSource) {
        if first == nil { first = source } else { others.append(source) }
        count += 1
    }

    /// Takes `source` out, if it is in. Loop thread only.
    func remove(_ source: DescriptorBackedSource) {
        if first === source {
            first = others.popLast()
        } else if let index = others.firstIndex(where: { $0 === source }) {
            others.remove(at: index)
        } else {
            return
        }
        count -= 1
    }

    /// Calls `body` with every source in it. Loop thread only.
    @inline(__always)
    func forEachSource(_ body: (DescriptorBackedSource) -> Void) {
        guard let first else { return }
        body(first)
        if !others.isEmpty { for source in others { body(source) } }
    }

    /// Takes every source out and answers them. Loop thread only.
    func removeAll() -> [DescriptorBackedSource] {
        var all: [DescriptorBackedSource] = []
        forEachSource { all.append($0) }
        first = nil
        others = []
        count = 0
        return all
    }

    /// The union of what its valid sources watch, but those paused by their rate limit: what the set is told while
    /// it is not parked. Loop thread only.
    var wanted: Events {
        var union: Events = []
        forEachSource { source in
            if source.isValid && !source.isHeldByRateLimit { union.formUnion(source.watchedEvents) }
        }
        return union
    }

    /// The union of what its valid sources in mode `modeID` watch, but those paused by their rate limit. Loop thread
    /// only.
    func claimed(inModeID modeID: Int) -> Events {
        var union: Events = []
        forEachSource { source in
            if source.isValid && !source.isHeldByRateLimit && source.isIn(modeID: modeID) {
                union.formUnion(source.watchedEvents)
            }
        }
        return union
    }

    /// Whether one of its sources is in mode `modeID`. Loop thread only.
    func hasSource(inModeID modeID: Int) -> Bool {
        var found = false
        forEachSource { source in
            if !found && source.isIn(modeID: modeID) { found = true }
        }
        return found
    }
}
