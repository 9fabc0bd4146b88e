import Glibc
import RunLoopKit
import RunLoopKitSystem

extension FileChangeSource {
    /// The changes a watch reports (a set of inotify event kinds). Whatever is chosen, a watch also reports
    /// ``FileChange/Kind/unmounted`` and ``FileChange/Kind/watchEnded``, and the source ``FileChange/Kind/overflow``.
    public struct Changes: OptionSet, Hashable, Sendable {
        /// The inotify mask bits.
        public let rawValue: UInt32

        /// Creates a set from inotify mask bits; bits other than the ones named here are ignored.
        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        /// Entries created in a watched directory: ``FileChange/Kind/created``.
        public static let created = Changes(rawValue: UInt32(IN_CREATE))
        /// Files written to: ``FileChange/Kind/modified``.
        public static let modified = Changes(rawValue: UInt32(IN_MODIFY))
        /// Files open for writing closed: ``FileChange/Kind/closedAfterWriting``.
        public static let closedAfterWriting = Changes(rawValue: UInt32(IN_CLOSE_WRITE))
        /// Entries deleted from a watched directory: ``FileChange/Kind/deleted``.
        public static let deleted = Changes(rawValue: UInt32(IN_DELETE))
        /// Entries moved or renamed: ``FileChange/Kind/movedFrom`` and ``FileChange/Kind/movedTo``.
        public static let moved = Changes(rawValue: UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO))
        /// Metadata changes: ``FileChange/Kind/attributesChanged``.
        public static let attributes = Changes(rawValue: UInt32(IN_ATTRIB))
        /// The watched path itself deleted: ``FileChange/Kind/deletedSelf``.
        public static let deletedSelf = Changes(rawValue: UInt32(IN_DELETE_SELF))
        /// The watched path itself moved: ``FileChange/Kind/movedSelf``.
        public static let movedSelf = Changes(rawValue: UInt32(IN_MOVE_SELF))

        /// Every change above.
        public static let all: Changes = [
            .created, .modified, .closedAfterWriting, .deleted, .moved, .attributes, .deletedSelf, .movedSelf,
        ]
    }

    /// A path a ``FileChangeSource`` watches: what ``FileChangeSource/addWatch(_:for:)`` answers, what each
    /// ``FileChange`` names, and what ``FileChangeSource/removeWatch(_:)`` takes. Equal watches are the same watch
    /// of the same source.
    public struct Watch: Hashable, Sendable, CustomStringConvertible {
        /// The path as it was given when the file was first watched by the source.
        public let path: String
        /// The kernel's watch descriptor, unique within the source.
        let descriptor: CInt
        /// The source's serial number: a watch of another source is never mistaken for one of this source.
        let sourceSerial: UInt64

        /// The path.
        public var description: String { path }
    }
}
