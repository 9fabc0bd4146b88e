/// An error from RunLoopKitGLib: GLib could not be loaded, or a context could not be bridged.
///
/// Compare errors by ``code``; new codes may be added, so switch statements over codes need a default.
public struct GLibError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. An extensible set of constants rather than an enum.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// GLib's runtime library, `libglib-2.0.so.0`, could not be loaded: GLib is not installed (on Debian and
        /// Ubuntu it is the package `libglib2.0-0`).
        public static let libraryUnavailable = Code("libraryUnavailable")
        /// GLib was loaded but lacks a function the bridge calls (a GLib older than 2.36).
        public static let symbolMissing = Code("symbolMissing")
        /// The `GMainContext` is acquired by another thread (it runs a GLib main loop there), so this thread cannot
        /// drive it.
        public static let contextOwnedElsewhere = Code("contextOwnedElsewhere")
        /// A mode the bridge cannot use: a loop runs one mode at a time in GLib, and ``RunLoopKit/Loop/Mode/common``
        /// names a set of modes.
        public static let invalidMode = Code("invalidMode")
        /// The loop is attached to a GLib context already (``RunLoopKit/Loop/attachToGLib(context:mode:priority:)``),
        /// or drives one already (``RunLoopKit/Loop/driveGLib(context:mode:)``): invalidate that bridge first.
        public static let alreadyBridged = Code("alreadyBridged")
        /// The loop cannot take the bridge's items: its thread has exited, or a system call failed (see the message).
        public static let loopRefused = Code("loopRefused")

        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// A sentence saying what failed and, where it helps, what to do, for logs.
    public let message: String

    /// Creates an error; RunLoopKitGLib creates these, tests may too.
    public init(_ code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The message, with the code.
    public var description: String { "GLibError.\(code): \(message)" }
}
