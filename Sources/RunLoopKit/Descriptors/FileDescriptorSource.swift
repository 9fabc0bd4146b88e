import RunLoopKitSystem

/// Watches a file descriptor of yours for readiness and calls a handler on the loop's thread (Linux's stand-in for
/// CF's port sources).
///
/// Readiness is level-triggered (see ``DescriptorBackedSource``): a handler that does not drain the descriptor is
/// called again on the next pass. What the handler is told is what holds *and* is watched at the moment it is called:
/// a handler earlier in the same pass that changed ``events`` of another source changes that source's report too (as
/// libuv does). Set ``events`` to `[]` to watch nothing, hang-up and error included, until it is set again: this is
/// how a C library's "stop watching this socket for now" maps. Edge-triggered and one-shot registrations are not
/// offered: setting `events` to `[]` in the handler gives one-shot behaviour, and level-triggered reports cannot be
/// lost by a handler that reads less than everything (edge-triggered ones can).
///
/// Several sources of one loop may watch the same descriptor (GLib's watch of a socket and the app's, or a C
/// library's input and output callbacks): the loop keeps one registration in its epoll set for them and watches the
/// union of what they watch, and each source is told only what it watches, in passes of its own modes, in
/// ``LoopItem/order`` among the others; each has its own handler, ``LoopEventItem/keepsRunAlive`` and invalidation.
///
/// The source does not own the descriptor: invalidate the source (every source of the descriptor) before closing the
/// descriptor. If the descriptor is closed anyway and its number reused, the old source never sees the new
/// descriptor's events. When the loop notices (a change of ``events``, resuming a parked source, or a new source on
/// the same number), it stops watching, calls the handler of each source that watched it one last time with
/// ``DescriptorBackedSource/Events/invalid`` in a pass of one of that source's modes, and invalidates them;
/// ``DescriptorBackedSource/failure`` says why. An `add` after the descriptor was closed throws
/// ``LoopError/Code/badDescriptor``, even when its number names another file now: for an eventfd, timerfd, signalfd
/// or epoll set, which all share one inode, the source keeps a duplicate of the descriptor while it is in no loop's
/// epoll set and the kernel compares the two (`kcmp(2)`), so such a source holds one more descriptor until it is
/// added.
///
/// Threading: ``LoopItem/invalidate()``, ``LoopItem/isValid`` and ``events`` (get and set) are safe from any thread;
/// the handler runs on the loop's thread. A source belongs to at most one loop, in any number of its modes.
public final class FileDescriptorSource: DescriptorBackedSource, @unchecked Sendable {  // Unchecked: as its base.
    /// Creates a source watching `descriptor`, whose handler is handed the source itself (so it can change what it
    /// watches or invalidate itself without a reference of its own) and the conditions that hold.
    ///
    /// - Parameters:
    ///   - descriptor: An open descriptor that supports readiness (a pipe, socket, eventfd, terminal, ...).
    ///   - events: The conditions to watch; default ``DescriptorBackedSource/Events/readable``.
    ///   - order: Among descriptors ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called on the loop's thread with the source and the conditions that hold.
    ///   - file: Where the source is made, for the flight recorder (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``);
    ///     leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
    public init(
        descriptor: CInt,
        events: Events = .readable,
        order: Int = 0,
        handler: @escaping @Sendable (FileDescriptorSource, Events) -> Void,
        file: StaticString = #fileID,
        line: UInt = #line
    ) throws(LoopError) {
        // The base calls back with itself: this very object, so the cast cannot fail. Stored as the base's callout
        // without a wrapping closure: a class reference is passed the same way whatever its static type.
        let callout = unsafeBitCast(handler, to: (@Sendable (DescriptorBackedSource, Events) -> Void).self)
        try super.init(
            descriptor: descriptor, events: events, order: order, callout: callout, file: file, line: line)
    }

    /// The watched descriptor.
    public var descriptor: CInt { watchedDescriptor }

    /// The conditions watched: any of ``DescriptorBackedSource/Events/readable``,
    /// ``DescriptorBackedSource/Events/writable`` and ``DescriptorBackedSource/Events/priority``
    /// (``DescriptorBackedSource/Events/error`` and ``DescriptorBackedSource/Events/hangUp`` are reported with them
    /// regardless), or `[]` to watch nothing at all, hang-up and error included. Safe from any thread.
    ///
    /// Set it to change what the source watches without recreating it: add `.writable` while output is pending and
    /// take it away once the buffer drained, drop `.readable` to stop reading from a peer that does not read its
    /// replies, or set `[]` while a C library says "watch nothing for now". Other sources of the same descriptor keep
    /// watching what they watch. On the loop's thread (a handler, typically) the change applies at once, to the
    /// reports of the pass under way too: a source no longer watching a condition is not told of it. From another
    /// thread it applies at the loop's next pass. Other bits are ignored. If the epoll set refuses the change (the
    /// descriptor was closed behind the source's back), the handler gets ``DescriptorBackedSource/Events/invalid`` and
    /// ``DescriptorBackedSource/failure`` says why. Set on an invalidated source, it is recorded (and read back) but
    /// watches nothing: the source is in no epoll set any more.
    public var events: Events {
        get { watchedEvents }
        set { setWatchedEvents(newValue) }
    }
}
