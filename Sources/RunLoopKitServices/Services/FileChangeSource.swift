import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Calls a handler on a loop's thread for each change to the files and directories it watches: entries created,
/// written, deleted, moved or renamed, metadata changed, the watched path itself deleted or moved (``FileChange``).
///
/// Linux mechanism: one inotify instance per source (`inotify_init1`, non-blocking and close-on-exec), one inotify
/// watch per path added with ``addWatch(_:for:)`` (`inotify_add_watch`), the instance's descriptor watched for
/// readability by a ``FileDescriptorSource``. Each time it is readable the source reads every queued record (into
/// one buffer it keeps for its whole life: nothing is allocated per change but the entry's name) and calls the
/// handler once per change, in the kernel's order. A directory watch reports changes to its entries, not to
/// entries of its subdirectories (inotify is not recursive: watch each directory you care about).
///
/// Nothing is lost silently: when the kernel's queue for the source overflows (more than
/// `fs.inotify.max_queued_events`, 16,384 by default, changes waiting while the loop did not read), the handler
/// gets ``FileChange/Kind/overflow`` where changes were dropped, the sign to rescan. Changes that happen before the
/// source is added to a loop, or while none of its modes runs, wait in that queue.
///
/// The source owns the inotify descriptor. ``invalidate()`` takes it out of the loop's epoll set and closes it,
/// which removes every watch: at once, or, when a delivery is under way on the loop's thread at that moment, as
/// soon as that delivery returns. A source nobody holds that is in no loop is closed the same way.
///
/// Like CF's custom sources, a source belongs to at most one loop, in any number of its modes; while it is in a
/// loop, the loop keeps it alive (the caller need not hold it) until it is invalidated or the loop's thread exits.
///
/// Threading: `init`, ``addWatch(_:for:)``, ``removeWatch(_:)``, ``watches``, ``invalidate()``, ``isValid`` and the
/// loop's `add`/`remove`/`contains` are safe from any thread; the handler runs on the loop's thread with no
/// RunLoopKit lock held, and may add and remove watches or invalidate its source.
public final class FileChangeSource: Sendable {
    /// Among descriptor-backed sources ready in the same pass, lower orders are handled first.
    public let order: Int

    let handler: @Sendable (FileChangeSource, FileChange) -> Void
    /// Tells this source's watches from another's (watch descriptors are numbered per instance).
    private let serial: UInt64
    private let valid = Atomic<Bool>(true)
    private let state: Locked<State>

    /// What the source holds, under one lock: reads of ``State/watches`` per change, a watch added or removed, an
    /// add to a loop, invalidation.
    private struct State: Sendable {
        /// The inotify instance, until invalidation.
        var instance: InotifyInstance?
        /// The descriptor source in the loop, made by the first `add`. Weak: the loop holds it, its handler holds
        /// this source, so a source in a loop lives as long as the loop keeps it.
        var watcher = WeakDescriptorSource()
        /// The live watches, by watch descriptor.
        var watches: [CInt: Watch] = [:]
        /// What ``keepsRunAlive`` was last set to, for a descriptor source made later.
        var keepsRunAlive = true
        /// What ``rateLimit`` was last set to, for a descriptor source made later.
        var rateLimit: RateLimit?
        /// Why the loop stopped watching the instance, when it did.
        var failure: LoopError?
    }

    private static let serials = Atomic<UInt64>(0)

    /// Creates a source with no watch yet, not in any loop. Any thread.
    ///
    /// - Parameters:
    ///   - order: Among descriptor-backed sources ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called on the loop's thread with the source and one change.
    /// - Throws: ``LoopError/Code/limitReached`` when no inotify instance can be made (`EMFILE`: the user's
    ///   instances, `fs.inotify.max_user_instances`, or the process's descriptors are used up);
    ///   ``LoopError/Code/systemCallFailed`` for `ENFILE`, `ENOMEM`.
    public init(order: Int = 0, handler: @escaping @Sendable (FileChangeSource, FileChange) -> Void) throws(LoopError) {
        let descriptor: CInt
        do {
            descriptor = try Inotify.create()
        } catch {
            throw Self.creationError(error)
        }
        self.order = order
        self.handler = handler
        serial = Self.serials.add(1, ordering: .relaxed).newValue
        state = Locked(State(instance: InotifyInstance(descriptor: descriptor)))
    }

    /// Creates a source watching `path` for `changes`, not in any loop: ``init(order:handler:)`` and
    /// ``addWatch(_:for:)`` in one call. Any thread.
    ///
    /// - Throws: What ``init(order:handler:)`` and ``addWatch(_:for:)`` throw.
    public convenience init(
        watching path: String,
        for changes: Changes = .all,
        order: Int = 0,
        handler: @escaping @Sendable (FileChangeSource, FileChange) -> Void
    ) throws(LoopError) {
        try self.init(order: order, handler: handler)
        try addWatch(path, for: changes)
    }

    /// Whether the source can still be added and report changes: false once invalidated. Safe from any thread.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Why the loop stopped watching the source's descriptor (the kernel refused a change of its epoll
    /// registration), which invalidated the source; `nil` otherwise. Safe from any thread.
    public var failure: LoopError? { state.withLock { $0.failure } }

    /// At most how often the source reads its queue and hands what it found to the handler: `nil` (the default) for
    /// no limit. Safe from any thread. For a watch on files that change in a storm: each time the loop finds the
    /// source ready counts as one call (the handler is then called once per queued change), and a call that would
    /// exceed the limit pauses the source until the limit's window ends, while the kernel keeps queueing changes. Past
    /// its queue's capacity the kernel drops them and the handler hears ``FileChange/Kind/overflow``, so nothing is
    /// lost silently. See ``RateLimit``, and Docs/Services.md, "Rate limits".
    public var rateLimit: RateLimit? {
        get { state.withLock { $0.rateLimit } }
        set {
            state.withLock { state in
                state.rateLimit = newValue
                state.watcher.source?.rateLimit = newValue
            }
        }
    }

    /// Whether the source is paused by its ``rateLimit`` now. Safe from any thread; the answer may be stale at once.
    public var isRateLimited: Bool { descriptorSource?.isRateLimited ?? false }

    /// Whether the source keeps runs of its modes going (default `true`, CF's rule for every source). Set it to
    /// `false` for a source that should report while the loop runs for other reasons but never be the reason
    /// (libuv's `uv_unref`), as a daemon's watcher usually should. Safe from any thread; from another thread it takes
    /// effect at the loop's next pass.
    public var keepsRunAlive: Bool {
        get { state.withLock { $0.keepsRunAlive } }
        set {
            state.withLock { state in
                state.keepsRunAlive = newValue
                state.watcher.source?.keepsRunAlive = newValue
            }
        }
    }

    /// The paths watched now, in the order they were first added. Safe from any thread.
    public var watches: [Watch] {
        state.withLock { $0.watches.values.sorted { $0.descriptor < $1.descriptor } }
    }

    /// Starts watching `path` for `changes`, from now on; answers its watch, which every ``FileChange`` of it names.
    /// Safe from any thread, the handler included.
    ///
    /// A directory's watch reports changes to its entries (with their names) and to itself; a file's, changes to
    /// the file. Symbolic links are followed. Adding a path whose file the source already watches (under this path
    /// or another) replaces what that watch reports and answers the same watch, with the path it was first added
    /// with.
    /// - Throws: ``LoopError/Code/notFound`` (`ENOENT`), ``LoopError/Code/permissionDenied`` (`EACCES`: the path
    ///   cannot be read), ``LoopError/Code/limitReached`` (`ENOSPC`: the user's inotify watches,
    ///   `fs.inotify.max_user_watches`, are used up), ``LoopError/Code/invalidArgument`` (an empty path or one with a
    ///   NUL byte, `changes` empty, `ENOTDIR`, `ENAMETOOLONG`, `ELOOP`), ``LoopError/Code/invalidated``,
    ///   ``LoopError/Code/systemCallFailed`` (`ENOMEM`).
    @discardableResult
    public func addWatch(_ path: String, for changes: Changes = .all) throws(LoopError) -> Watch {
        let mask = changes.intersection(.all).rawValue
        guard mask != 0 else {
            throw LoopError(.invalidArgument, message: "a watch of \(path) must report at least one kind of change")
        }
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw LoopError(.invalidArgument, message: "\"\(path)\" is not a path (empty, or it holds a NUL byte)")
        }
        return try state.withLock { state throws(LoopError) -> Watch in
            guard let instance = state.instance else {
                throw LoopError(.invalidated, message: "an invalidated file-change source cannot watch \(path)")
            }
            let descriptor: CInt
            do throws(SystemError) {
                descriptor = try Inotify.addWatch(instance.descriptor, path: path, mask: mask)
            } catch {
                throw Self.watchError(error, path: path)
            }
            if let existing = state.watches[descriptor] { return existing }
            let watch = Watch(path: path, descriptor: descriptor, sourceSerial: serial)
            state.watches[descriptor] = watch
            return watch
        }
    }

    /// Stops watching `watch`'s path. Safe from any thread, the handler included; removing a watch that ended,
    /// was removed, or belongs to another source does nothing.
    ///
    /// Changes it saw that were not handled yet are dropped, and no ``FileChange/Kind/watchEnded`` is reported for it.
    public func removeWatch(_ watch: Watch) {
        guard watch.sourceSerial == serial else { return }
        state.withLock { state in
            guard let instance = state.instance, state.watches.removeValue(forKey: watch.descriptor) != nil else {
                return
            }
            do throws(SystemError) {
                try Inotify.removeWatch(instance.descriptor, watch.descriptor)
            } catch {
                // EINVAL: the kernel ended the watch already (its IN_IGNORED is queued, and will be dropped).
                require(error.errno == EINVAL, "RunLoopKit: inotify_rm_watch on a file-change source failed: \(error)")
            }
        }
    }

    /// Stops watching for good: takes the source out of every mode of its loop and closes its inotify descriptor,
    /// which removes every watch. Safe from any thread, the handler included; invalidating twice does nothing.
    ///
    /// After it returns no new handler call starts (one already running finishes), changes not yet handled are
    /// dropped, and the descriptor is closed, or, when a delivery is under way on the loop's thread, closed as soon
    /// as it returns.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        let (instance, descriptorSource) = state.withLock { state in
            defer {
                state.instance = nil
                state.watches = [:]
            }
            return (state.instance, state.watcher.source)
        }
        // Out of the epoll set first, on this thread; then the instance is let go (closed unless a delivery holds it).
        withExtendedLifetime(instance) { descriptorSource?.invalidate() }
    }

    // MARK: Scheduling (for Loop's add/remove/contains)

    /// Adds the source to `mode` of `loop`, making its descriptor source on the first add.
    func add(to loop: Loop, mode: Loop.Mode) throws(LoopError) {
        try state.withLock { state throws(LoopError) in
            guard isValid, let instance = state.instance else {
                throw LoopError(.invalidated, message: "an invalidated file-change source cannot be added to a loop")
            }
            let (keepsRunAlive, rateLimit) = (state.keepsRunAlive, state.rateLimit)
            try state.watcher.add(to: loop, mode: mode) { () throws(LoopError) in
                try makeDescriptorSource(watching: instance.descriptor)
            } preparing: { source in
                source.keepsRunAlive = keepsRunAlive
                if let rateLimit { source.rateLimit = rateLimit }
            }
        }
    }

    /// The descriptor source in the source's loop, if it was added to one that still holds it.
    var descriptorSource: FileDescriptorSource? { state.withLock { $0.watcher.source } }

    /// The inotify descriptor, until invalidation (for tests that aim a fault at it).
    var inotifyDescriptor: CInt? { state.withLock { $0.instance?.descriptor } }

    private func makeDescriptorSource(watching descriptor: CInt) throws(LoopError) -> FileDescriptorSource {
        try FileDescriptorSource(descriptor: descriptor, events: .readable, order: order) { [self] source, events in
            guard !events.contains(.invalid) else { return stopWatching(after: source.failure) }
            deliver()
        }
    }

    /// The loop could no longer watch the descriptor (a refused change of its registration): the source is
    /// invalidated, with the reason in ``failure``, rather than left silently dead. Loop thread only.
    private func stopWatching(after failure: LoopError?) {
        state.withLock { $0.failure = failure }
        invalidate()
    }

    // MARK: Delivery

    /// The inotify descriptor is readable: reads every queued record, into the instance's buffer, and hands each
    /// change to the handler, until the queue is empty or the source is invalidated. Loop thread only.
    private func deliver() {
        guard let instance = state.withLock({ $0.instance }) else { return }  // Held until this delivery returns.
        let buffer = instance.buffer
        while isValid {
            let count: Int
            do {
                count = try Inotify.read(instance.descriptor, into: buffer)
            } catch {
                trap("RunLoopKit: reading a file-change source's inotify descriptor failed: \(error)")
            }
            var offset = 0
            while offset + Inotify.headerSize <= count {
                let record = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + Inotify.headerSize
                offset = nameStart + Int(record.len)
                let name = Self.name(in: buffer, from: nameStart, length: Int(record.len))
                guard let change = change(from: record, name: name) else { continue }
                handler(self, change)
                guard isValid else { return }
            }
            // The kernel fills a read with every whole record that fits: with room left for one more, none was left.
            if count < buffer.count - Inotify.largestRecordSize { return }
        }
    }

    /// The change a record reports, or `nil` for one of a watch removed meanwhile (or a kind not asked for).
    private func change(from record: inotify_event, name: String?) -> FileChange? {
        guard let kind = Self.kind(of: record.mask) else { return nil }
        if kind == .overflow { return FileChange(kind: .overflow, watch: nil) }
        let watch = state.withLock { state in
            kind == .watchEnded ? state.watches.removeValue(forKey: record.wd) : state.watches[record.wd]
        }
        guard let watch else { return nil }
        let isDirectory = record.mask & UInt32(IN_ISDIR) != 0
        return FileChange(kind: kind, watch: watch, name: name, isDirectory: isDirectory, cookie: record.cookie)
    }

    /// The NUL-padded name of `length` bytes at `start`, or `nil` when there is none.
    private static func name(in buffer: UnsafeMutableRawBufferPointer, from start: Int, length: Int) -> String? {
        guard length > 0 else { return nil }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[start..<start + length])
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        guard end > 0 else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)
    }

    /// The kind an inotify mask reports (one event bit per record, with flags). No table: nothing allocated per record.
    private static func kind(of mask: UInt32) -> FileChange.Kind? {
        func has(_ bit: CInt) -> Bool { mask & UInt32(bit) != 0 }
        if has(IN_Q_OVERFLOW) { return .overflow }
        if has(IN_IGNORED) { return .watchEnded }
        if has(IN_UNMOUNT) { return .unmounted }
        if has(IN_CREATE) { return .created }
        if has(IN_MODIFY) { return .modified }
        if has(IN_CLOSE_WRITE) { return .closedAfterWriting }
        if has(IN_DELETE) { return .deleted }
        if has(IN_MOVED_FROM) { return .movedFrom }
        if has(IN_MOVED_TO) { return .movedTo }
        if has(IN_ATTRIB) { return .attributesChanged }
        if has(IN_DELETE_SELF) { return .deletedSelf }
        if has(IN_MOVE_SELF) { return .movedSelf }
        return nil
    }

    // MARK: Errors

    private static func creationError(_ error: SystemError) -> LoopError {
        guard error.errno == EMFILE else { return LoopError(error, context: "creating an inotify instance") }
        return LoopError(
            .limitReached, errno: EMFILE,
            message: "no inotify instance could be made: the user's instances (fs.inotify.max_user_instances = "
                + "\(limit("max_user_instances"))) or this process's descriptors are used up: \(error)")
    }

    private static func watchError(_ error: SystemError, path: String) -> LoopError {
        switch error.errno {
        case ENOENT:
            LoopError(.notFound, errno: ENOENT, message: "cannot watch \(path): no such file or directory")
        case EACCES, EPERM:
            LoopError(
                .permissionDenied, errno: error.errno, message: "cannot watch \(path): it cannot be read: \(error)")
        case ENOSPC:
            LoopError(
                .limitReached, errno: ENOSPC,
                message: "cannot watch \(path): the user's inotify watches (fs.inotify.max_user_watches = "
                    + "\(limit("max_user_watches"))) are used up")
        case ENOTDIR, ENAMETOOLONG, ELOOP:
            LoopError(.invalidArgument, errno: error.errno, message: "cannot watch \(path): \(error)")
        default:
            LoopError(.systemCallFailed, errno: error.errno, message: "cannot watch \(path): \(error)")
        }
    }

    /// The value of `/proc/sys/fs/inotify/<name>`, or "?" when it cannot be read: for error messages.
    private static func limit(_ name: String) -> String {
        guard let bytes = try? FileDescriptorCalls.contents(of: "/proc/sys/fs/inotify/" + name) else { return "?" }
        return String(decoding: bytes, as: UTF8.self).filter { $0.isNumber }
    }
}
