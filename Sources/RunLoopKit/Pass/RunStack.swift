/// The runs in progress on a loop's thread, innermost first: a run's mode and deadline, and how deep runs are
/// nested. Loop thread only.
///
/// A run (``Loop/run(in:for:returnAfterSourceHandled:)``) pushes a frame at its entry and pops it at its exit; a run
/// nested in a callout pushes on top, and its exit puts the outer run's mode and deadline back.
struct RunStack {
    /// What a run replaced at its entry, to put back at its exit.
    struct Frame {
        fileprivate let mode: ModeState?
        fileprivate let deadline: Int64
    }

    /// The innermost run's mode, `nil` when the loop is not running.
    private(set) var mode: ModeState?
    /// How many runs are nested: 0 when the loop is not running.
    private(set) var depth = 0
    /// The innermost run's deadline in monotonic nanoseconds (`Int64.max`: none).
    private(set) var deadline: Int64 = .max
    /// Whether an actor job of this loop is running: runs nested inside it run no other job.
    var isRunningJob = false
    /// Bridges' calls at the entry and exit of each run that is not a host's pass (``Loop/watchOwnRuns(by:_:)``);
    /// usually none.
    var ownRunWatchers: [Loop.OwnRunWatcher] = []
    /// A bridge's call for work made on the loop's thread while the loop counts as asleep for its host
    /// (``Loop/setHostWorkHandler(by:_:)``); `nil`: such work wakes the host through ``Loop/pollDescriptor``.
    var hostWorkHandler: Loop.HostWorkHandler?

    /// Makes a run of `mode` until `deadline` the innermost; answers what it replaced.
    mutating func push(_ mode: ModeState, deadline: Int64) -> Frame {
        let outer = Frame(mode: self.mode, deadline: self.deadline)
        depth += 1
        self.mode = mode
        self.deadline = deadline
        return outer
    }

    /// Ends the innermost run, putting back `outer` (what its ``push(_:deadline:)`` answered).
    mutating func pop(restoring outer: Frame) {
        depth -= 1
        mode = outer.mode
        deadline = outer.deadline
    }
}
