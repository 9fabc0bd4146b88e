import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Calls a handler on a loop's thread for each change to the files and directories it watches: entries created,
/// written, deleted, moved or renamed, metadata changed, the watched path itself deleted or moved (``FileChange``).
///
/// Linux mechanism: one inotify instance per source (`inotify_init1`, non-blocking and close-on-exec), one inotify
/// watch per path added with ``addWatch(_:for:)`` (`inotify_add_watch`), the instance's descriptor watched for
/// readability by a `FileDescriptorSource`. Each time it is readable the source reads every queued record (into
/// one buffer it keeps for its whole life: nothing is allocated per change but the entry's name) and calls the
/// handler once per change, in the kernel's order. A directory watch reports changes to its entries, not to
/// entries of its subdirectories (inotify is not recursive: watch each directory you care about).
///
/// Nothing is lost silently: when the kernel's queue for the source overflows (more than
/// `fs.inotify.max_queued_events`, 16,384 by default, changes waiting while the loop did not read), the handler
/// gets ``FileChange/Kind/overflow`` where changes were dropped, the sign to rescan. Changes that happen before the
/// source is added to a loop, or while none of its modes runs, wait in that queue.
///
/// The source owns the inotify descriptor. `LoopItem.invalidate()` takes it out of the loop's epoll set, removes every
/// watch and closes it: at once, or, when a delivery is under way on the loop's thread at that moment, as soon as that
/// delivery returns. A source nobody holds that is in no loop is closed the same way.
///
/// Like CF's custom sources, a source belongs to at most one loop, in any number of its modes; while it is in a
/// loop, the loop keeps it alive (the caller need not hold it) until it is invalidated or the loop's thread exits.
///
/// A storm of changes can be paced with a rate limit (`LoopEventItem.rateLimit`): each time the loop finds the source
/// ready counts as one call (the handler is then called once per queued change), and a paused source lets the kernel
/// queue changes meanwhile; past the queue's capacity the handler hears ``FileChange/Kind/overflow``.
///
/// Threading: `init`, ``addWatch(_:for:)``, ``removeWatch(_:)``, ``watches``, `LoopItem.invalidate()`,
/// `LoopItem.isValid` and the loop's `add`/`remove`/`contains` are safe from any thread; the handler runs on the
/// loop's thread with no RunLoopKit lock held, and may add and remove watches or invalidate its source.
public final class FileChangeSource: DescriptorBackedSource, @unchecked Sendable {  // Unchecked: see `buffer`.
    let handler: @Sendable (FileChangeSource, FileChange) -> Void
    /// Tells this source's watches from another's (watch descriptors are numbered per instance).
    private let serial: UInt64
    /// The live watches, by watch descriptor; emptied by invalidation. Any thread.
    private let watchTable = Locked<[CInt: Watch]>([:])
    /// Where records are read, reused by every delivery: about 500 records with short names, allocated once per
    /// source and freed with it. The loop's thread only (one delivery at a time: a nested run never calls a handler
    /// that is already running).
    private let buffer: UnsafeMutableRawBufferPointer

    private static let serials = Atomic<UInt64>(0)
    private static let bufferSize = 16 * 1024

    /// Creates a source with no watch yet, not in any loop. Any thread.
    ///
    /// - Parameters:
    ///   - order: Among descriptor-backed sources ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called on the loop's thread with the source and one change.
    /// - Throws: `LoopError.Code.limitReached` when no inotify instance can be made (`EMFILE`: the user's
    ///   instances, `fs.inotify.max_user_instances`, or the process's descriptors are used up);
    ///   `LoopError.Code.systemCallFailed` for `ENFILE`, `ENOMEM`.
    public init(order: Int = 0, handler: @escaping @Sendable (FileChangeSource, FileChange) -> Void) throws(LoopError) {
        let descriptor: CInt
        do {
            descriptor = try Inotify.create()
        } catch {
            throw Self.creationError(error)
        }
        self.handler = handler
        serial = Self.serials.add(1, ordering: .relaxed).newValue
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Self.bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
        self.buffer = buffer
        do {
            try super.init(
                descriptor: descriptor, events: .readable, order: order, ownsDescriptor: true,
                callout: { source, events in unsafeDowncast(source, to: FileChangeSource.self).deliver(events) },
                invalidationStep: { source in unsafeDowncast(source, to: FileChangeSource.self).removeAllWatches() })
        } catch {
            buffer.deallocate()  // The base closed the descriptor.
            throw error
        }
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

    deinit {
        buffer.deallocate()
    }

    /// The paths watched now, in the order they were first added. Safe from any thread.
    public var watches: [Watch] {
        watchTable.withLock { $0.values.sorted { $0.descriptor < $1.descriptor } }
    }

    /// Starts watching `path` for `changes`, from now on; answers its watch, which every ``FileChange`` of it names.
    /// Safe from any thread, the handler included.
    ///
    /// A directory's watch reports changes to its entries (with their names) and to itself; a file's, changes to
    /// the file. Symbolic links are followed. Adding a path whose file the source already watches (under this path
    /// or another) replaces what that watch reports and answers the same watch, with the path it was first added
    /// with.
    /// - Throws: `LoopError.Code.notFound` (`ENOENT`), `LoopError.Code.permissionDenied` (`EACCES`: the path
    ///   cannot be read), `LoopError.Code.limitReached` (`ENOSPC`: the user's inotify watches,
    ///   `fs.inotify.max_user_watches`, are used up), `LoopError.Code.invalidArgument` (an empty path or one with a
    ///   NUL byte, `changes` empty, `ENOTDIR`, `ENAMETOOLONG`, `ELOOP`), `LoopError.Code.invalidated`,
    ///   `LoopError.Code.systemCallFailed` (`ENOMEM`).
    @discardableResult
    public func addWatch(_ path: String, for changes: Changes = .all) throws(LoopError) -> Watch {
        let mask = changes.intersection(.all).rawValue
        guard mask != 0 else {
            throw LoopError(.invalidArgument, message: "a watch of \(path) must report at least one kind of change")
        }
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw LoopError(.invalidArgument, message: "\"\(path)\" is not a path (empty, or it holds a NUL byte)")
        }
        return try watchTable.withLock { table throws(LoopError) -> Watch in
            // Under the lock, which invalidation's removal of every watch takes too: none is added after it.
            guard isValid else {
                throw LoopError(.invalidated, message: "an invalidated file-change source cannot watch \(path)")
            }
            let descriptor: CInt
            do throws(SystemError) {
                descriptor = try Inotify.addWatch(watchedDescriptor, path: path, mask: mask)
            } catch {
                throw Self.watchError(error, path: path)
            }
            if let existing = table[descriptor] { return existing }
            let watch = Watch(path: path, descriptor: descriptor, sourceSerial: serial)
            table[descriptor] = watch
            return watch
        }
    }

    /// Stops watching `watch`'s path. Safe from any thread, the handler included.
    ///
    /// Changes it saw that were not handled yet are dropped, and no ``FileChange/Kind/watchEnded`` is reported for it.
    /// - Returns: `true` when the watch was this source's and active, and has ended; `false` when there was nothing
    ///   to remove: the watch ended already (its path went away, or it was removed before), belongs to another
    ///   source, or the source was invalidated (which ended every watch).
    @discardableResult
    public func removeWatch(_ watch: Watch) -> Bool {
        guard watch.sourceSerial == serial else { return false }
        return watchTable.withLock { table in
            guard table.removeValue(forKey: watch.descriptor) != nil else { return false }
            removeKernelWatch(watch.descriptor)
            return true
        }
    }

    /// Invalidation's own step: every watch ends, so the kernel queues nothing more. Any thread.
    private func removeAllWatches() {
        watchTable.withLock { table in
            for descriptor in table.keys { removeKernelWatch(descriptor) }
            table.removeAll()
        }
    }

    private func removeKernelWatch(_ descriptor: CInt) {
        do throws(SystemError) {
            try Inotify.removeWatch(watchedDescriptor, descriptor)
        } catch {
            // EINVAL: the kernel ended the watch already (its IN_IGNORED is queued, and will be dropped).
            require(error.errno == EINVAL, "RunLoopKit: inotify_rm_watch on a file-change source failed: \(error)")
        }
    }

    /// The inotify descriptor, until invalidation closed it (for tests that aim a fault at it).
    var inotifyDescriptor: CInt? { withOwnedDescriptor { $0 } }

    // MARK: Delivery

    /// The inotify descriptor is readable: reads every queued record into the source's buffer and hands each change
    /// to the handler, until the queue is empty or the source is invalidated. Loop thread only.
    private func deliver(_ events: Events) {
        guard !events.contains(.invalid) else { return }  // A refused change: the loop invalidated the source.
        _ = withOwnedDescriptor { descriptor in read(from: descriptor) }  // Held open until this delivery returns.
    }

    /// Reads and hands on every queued record of the inotify `descriptor`. Loop thread only.
    private func read(from descriptor: CInt) {
        while isValid {
            let count: Int
            do {
                count = try Inotify.read(descriptor, into: buffer)
            } catch {
                trap("RunLoopKit: reading a file-change source's inotify descriptor failed: \(error)")
            }
            let whole = Self.forEachRecord(in: UnsafeRawBufferPointer(rebasing: buffer[..<count])) { record, name in
                guard let change = change(from: record, name: name) else { return true }
                handler(self, change)
                return isValid
            }
            guard isValid else { return }
            // Not what the kernel writes: what came after was not understood, so changes may have been lost.
            if !whole { handler(self, FileChange(kind: .overflow, watch: nil)) }
            // The kernel fills a read with every whole record that fits: with room left for one more, none was left.
            if count < buffer.count - Inotify.largestRecordSize { return }
        }
    }

    /// The change a record reports, or `nil` for one of a watch removed meanwhile (or a kind not asked for).
    private func change(from record: inotify_event, name: String?) -> FileChange? {
        guard let kind = Self.kind(of: record.mask) else { return nil }
        if kind == .overflow { return FileChange(kind: .overflow, watch: nil) }
        let watch = watchTable.withLock { table in
            kind == .watchEnded ? table.removeValue(forKey: record.wd) : table[record.wd]
        }
        guard let watch else { return nil }
        let isDirectory = record.mask & UInt32(IN_ISDIR) != 0
        return FileChange(kind: kind, watch: watch, name: name, isDirectory: isDirectory, cookie: record.cookie)
    }

    /// Calls `body` with each record of `bytes` (what one read of an inotify descriptor answered) and its name, in
    /// order, while `body` answers `true`. Answers `false` when the bytes do not end with a whole record (a record
    /// whose name runs past the end, or a stray tail shorter than a record's fixed part): the kernel never writes
    /// that, and the walk stops there, reading nothing beyond `bytes`. No system call.
    static func forEachRecord(
        in bytes: UnsafeRawBufferPointer, _ body: (inotify_event, String?) -> Bool
    ) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= Inotify.headerSize else { return false }
            let record = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameStart = offset + Inotify.headerSize
            guard Int(record.len) <= bytes.count - nameStart else { return false }
            offset = nameStart + Int(record.len)
            guard body(record, name(in: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<offset]))) else {
                return true
            }
        }
        return true
    }

    /// The NUL-padded name `bytes` hold, or `nil` when there is none.
    private static func name(in bytes: UnsafeRawBufferPointer) -> String? {
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
        guard error.errno == EMFILE else {
            return LoopError(systemCall: error, context: "creating an inotify instance")
        }
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
