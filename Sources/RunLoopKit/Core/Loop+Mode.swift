extension Loop {
    /// The name of a run-loop mode: the set of items a run watches.
    ///
    /// Modes are compared by name, as CF compares mode strings. A mode comes into being the first time
    /// an item, a block or ``Loop/addCommonMode(_:)`` names it, and lives as long as its loop.
    /// ``common`` is not a real mode but stands for every mode in the loop's common-modes set.
    public struct Mode: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The mode's name.
        public let name: String

        /// Creates a mode named `name`.
        public init(_ name: String) {
            self.name = name
        }

        /// Creates a mode from a string literal, e.g. `let tracking: Loop.Mode = "tracking"`.
        public init(stringLiteral name: String) {
            self.name = name
        }

        /// The mode a loop runs in when no other is named; always a member of the common modes.
        public static let `default` = Mode("default")

        /// The pseudo-mode standing for every mode in a loop's common-modes set, now and later.
        ///
        /// Items and blocks can be added to it; a loop cannot run in it.
        public static let common = Mode("common")

        /// The mode's name.
        public var description: String { name }
    }
}
