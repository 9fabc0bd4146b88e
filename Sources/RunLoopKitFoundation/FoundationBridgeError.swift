/// An error from RunLoopKitFoundation: a loop could not be bridged to Foundation's run loop.
///
/// Compare errors by ``code``; new codes may be added, so switch statements over codes need a default.
public struct FoundationBridgeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. An extensible set of constants rather than an enum.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The loop is bridged already (``RunLoopKit/Loop/bridgeToFoundation(mode:)``): one bridge serves both
        /// directions, and a second would run every pass twice. Invalidate the first to bridge again.
        public static let alreadyBridged = Code("alreadyBridged")
        /// Only ``RunLoopKit/Loop/main`` can be bridged from another thread than its own: Foundation gives no other
        /// thread's `RunLoop`.
        public static let notOnLoopThread = Code("notOnLoopThread")
        /// A mode the bridge cannot use: a loop runs one mode at a time inside Foundation's run loop, and
        /// ``RunLoopKit/Loop/Mode/common`` names a set of modes.
        public static let invalidMode = Code("invalidMode")
        /// The loop's thread has exited.
        public static let loopTerminated = Code("loopTerminated")
        /// A system call the bridge needs failed (making the loop's ``RunLoopKit/Loop/pollDescriptor`` with no
        /// descriptor left, say); the message names it and its `errno`.
        public static let systemCallFailed = Code("systemCallFailed")

        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// A sentence saying what failed and, where it helps, what to do, for logs.
    public let message: String

    /// Creates an error; RunLoopKitFoundation creates these, tests may too.
    public init(_ code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The message, with the code.
    public var description: String { "FoundationBridgeError.\(code): \(message)" }
}
