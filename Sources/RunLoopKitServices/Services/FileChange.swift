import RunLoopKit
import RunLoopKitSystem

/// One change a ``FileChangeSource`` reports: what happened, to which watched path, and to which entry in it.
///
/// Made by the source on its loop's thread, one per inotify record; handed to the source's handler there.
public struct FileChange: Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// An entry was created in a watched directory (`IN_CREATE`).
        case created
        /// A file was written to (`IN_MODIFY`): the watched file, or an entry of a watched directory.
        case modified
        /// A file open for writing was closed (`IN_CLOSE_WRITE`): a writer finished.
        ///
        /// The kernel reports it when the last reference to the open file goes, not at the writer's `close`: when
        /// another thread of the writer's process forked meanwhile, the child holds a copy of the descriptor until
        /// it execs or exits, so the change can come after later changes, or after a watch added once `close`
        /// returned (measured here: 28 of 2,000 writes beside a thread that forks in a loop).
        case closedAfterWriting
        /// An entry was deleted from a watched directory (`IN_DELETE`).
        case deleted
        /// An entry was moved out of a watched directory, or renamed in it (`IN_MOVED_FROM`); ``FileChange/cookie``
        /// pairs it with the ``movedTo`` of the same move.
        case movedFrom
        /// An entry was moved into a watched directory, or renamed in it (`IN_MOVED_TO`).
        case movedTo
        /// Metadata changed (`IN_ATTRIB`): permissions, owner, timestamps, link count, extended attributes.
        case attributesChanged
        /// The watched file or directory itself was deleted (`IN_DELETE_SELF`); ``watchEnded`` follows.
        case deletedSelf
        /// The watched file or directory itself was moved (`IN_MOVE_SELF`); the watch follows it, but its
        /// ``FileChangeSource/Watch/path`` still names where it was.
        case movedSelf
        /// The file system holding the watched path was unmounted (`IN_UNMOUNT`); ``watchEnded`` follows.
        case unmounted
        /// The watch is gone (`IN_IGNORED`): its file was deleted or its file system unmounted. The source forgot
        /// it; nothing more comes from it. Not reported for a watch removed with
        /// ``FileChangeSource/removeWatch(_:)`` or by invalidation.
        case watchEnded
        /// The kernel's queue of the source overflowed (`IN_Q_OVERFLOW`, beyond `fs.inotify.max_queued_events`):
        /// changes after the last one reported were lost. Rescan what you watch. Has no watch and no name. Also
        /// reported, for the same reason, if a read of the inotify descriptor ever ended in a partial record.
        case overflow

        /// The kind's name.
        public var description: String {
            switch self {
            case .created: "created"
            case .modified: "modified"
            case .closedAfterWriting: "closedAfterWriting"
            case .deleted: "deleted"
            case .movedFrom: "movedFrom"
            case .movedTo: "movedTo"
            case .attributesChanged: "attributesChanged"
            case .deletedSelf: "deletedSelf"
            case .movedSelf: "movedSelf"
            case .unmounted: "unmounted"
            case .watchEnded: "watchEnded"
            case .overflow: "overflow"
            }
        }
    }

    /// What happened.
    public let kind: Kind
    /// The watch that saw it; `nil` only for ``Kind/overflow``.
    public let watch: FileChangeSource.Watch?
    /// The entry of a watched directory the change is about, or `nil` when it is about the watched path itself.
    /// Decoded as UTF-8 (a name that is not valid UTF-8 has its invalid bytes replaced).
    public let name: String?
    /// Whether the entry (or the watched path) is a directory (`IN_ISDIR`).
    public let isDirectory: Bool
    /// The same number on the ``Kind/movedFrom`` and ``Kind/movedTo`` of one move, unique among moves; 0 for other
    /// kinds. A `movedFrom` with no `movedTo` (in the same or the next handler call) moved out of every watched
    /// directory.
    public let cookie: UInt32

    /// Creates a change. Made by the source only, so the type can gain fields without breaking code that reads
    /// it.
    init(
        kind: Kind,
        watch: FileChangeSource.Watch?,
        name: String? = nil,
        isDirectory: Bool = false,
        cookie: UInt32 = 0
    ) {
        self.kind = kind
        self.watch = watch
        self.name = name
        self.isDirectory = isDirectory
        self.cookie = cookie
    }

    /// The changed path: the watch's path joined with ``name``, or the watch's path alone; `nil` for
    /// ``Kind/overflow``. Built when asked for.
    public var path: String? {
        guard let watch else { return nil }
        guard let name else { return watch.path }
        return watch.path.hasSuffix("/") ? watch.path + name : watch.path + "/" + name
    }

    /// The kind, the path and the flags, for logs.
    public var description: String {
        var text = "\(kind)"
        if let path { text += " \(path)" }
        if isDirectory { text += " (directory)" }
        if cookie != 0 { text += " cookie \(cookie)" }
        return text
    }
}
