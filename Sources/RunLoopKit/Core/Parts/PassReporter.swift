/// The handler ``Loop/reportPasses(to:)`` set, called at the end of every pass. Loop thread only.
struct PassReporter {
    /// The handler, `nil` when none is set.
    var handler: (@Sendable (Loop.PassFigures) -> Void)?
    /// The handler is running: passes of a run nested in it are not reported.
    var isCalling = false

    /// What a pass's figures are measured from, taken at its start while a handler is set.
    struct Mark {
        /// The loop's asleep total at the pass's start.
        let asleep: Int64
        /// The loop's callouts at the pass's start.
        let handled: Loop.HandledCounts
    }
}
