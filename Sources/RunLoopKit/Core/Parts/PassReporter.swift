/// The handler ``Loop/reportPasses(to:)`` set, called at the end of every pass. Loop thread only.
struct PassReporter {
    /// The handler, `nil` when none is set.
    var handler: (@Sendable (Loop.PassFigures) -> Void)?
    /// The handler is running: passes of a run nested in it are not reported.
    var isCalling = false
    /// The callouts counted when the pass in progress at each depth of runs began (index: the run stack's depth),
    /// for passes begun while a handler was set. Grows to the deepest nesting reported, then allocates no more.
    var startCounts: [Loop.HandledCounts] = []

    /// Keeps `counts` as the start of the pass beginning at `depth`.
    mutating func markStart(_ counts: Loop.HandledCounts, depth: Int) {
        while startCounts.count <= depth { startCounts.append(Loop.HandledCounts()) }
        startCounts[depth] = counts
    }
}
