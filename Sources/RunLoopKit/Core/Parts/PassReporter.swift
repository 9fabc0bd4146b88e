/// The handler ``Loop/reportPasses(to:)`` set, called at the end of every pass. Loop thread only.
struct PassReporter {
    /// The handler, `nil` when none is set.
    var handler: (@Sendable (Loop.PassFigures) -> Void)?
    /// The handler is running: passes of a run nested in it are not reported.
    var isCalling = false
    /// The callouts counted when the pass in progress of an outermost run began (if a handler was set then).
    private var outermostStart = Loop.HandledCounts()
    /// The same for the passes in progress of nested runs, by depth from 2. Grows to the deepest nesting reported,
    /// then allocates no more.
    private var nestedStarts: [Loop.HandledCounts] = []

    /// Keeps `counts` as the start of the pass beginning in a run at `depth` (1: an outermost run).
    @inline(__always)
    mutating func markStart(_ counts: Loop.HandledCounts, depth: Int) {
        if depth == 1 {
            outermostStart = counts
        } else {
            markNestedStart(counts, depth: depth)
        }
    }

    private mutating func markNestedStart(_ counts: Loop.HandledCounts, depth: Int) {
        while nestedStarts.count <= depth - 2 { nestedStarts.append(Loop.HandledCounts()) }
        nestedStarts[depth - 2] = counts
    }

    /// The counts ``markStart(_:depth:)`` kept for the pass in progress at `depth`.
    @inline(__always)
    func start(depth: Int) -> Loop.HandledCounts {
        depth == 1 ? outermostStart : nestedStarts[depth - 2]
    }
}
