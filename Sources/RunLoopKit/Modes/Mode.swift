extension Loop {
    /// The name of a run-loop mode: the set of items a run watches.
    ///
    /// Modes are compared by name, as CF compares mode strings. A mode comes into being the first time
    /// an item, a block or ``Loop/addCommonMode(_:)`` names it, and lives as long as its loop.
    /// ``common`` is not a real mode but stands for every mode in the loop's common-modes set.
    ///
    /// A mode is its name and nothing else, and the two predefined modes are built inline where they are named (their
    /// names are short enough to need no allocation): a call that takes a mode's default, `in: .default`, costs no more
    /// than one that takes none, and the loop tells the default mode by one comparison.
    @frozen
    public struct Mode: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The mode's name.
        public let name: String

        /// Creates a mode named `name`.
        @inlinable
        public init(_ name: String) {
            self.name = name
        }

        /// Creates a mode from a string literal, e.g. `let tracking: Loop.Mode = "tracking"`.
        @inlinable
        public init(stringLiteral name: String) {
            self.name = name
        }

        /// The mode a loop runs in when no other is named; always a member of the common modes.
        @inlinable
        public static var `default`: Mode { Mode("default") }

        /// The pseudo-mode standing for every mode in a loop's common-modes set, now and later.
        ///
        /// Items and blocks can be added to it; a loop cannot run in it.
        @inlinable
        public static var common: Mode { Mode("common") }

        /// The mode's name.
        public var description: String { name }
    }
}
