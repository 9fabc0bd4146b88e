/// The handler ``Loop/reportPasses(to:)`` set, called at the end of every pass. Loop thread only.
struct PassReporter {
    /// The handler, `nil` when none is set.
    var handler: (@Sendable (Loop.PassFigures) -> Void)?
    /// The handler is running: passes of a run nested in it are not reported.
    var isCalling = false

}
