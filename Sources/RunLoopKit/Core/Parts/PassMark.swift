/// Where a pass began, taken at its start: its end measures the pass from it. Loop thread only, on the stack (two
/// words and a flag, so a pass keeps little across its callouts).
struct PassMark {
    /// When the pass began (the end of the previous pass of its run, or the run's start).
    let startedAt: Int64
    /// The loop's asleep total then: what the pass slept is the difference at its end.
    let asleep: Int64
    /// A pass handler was set then: the callouts counted so far wait in the ``PassReporter`` (by the run's depth),
    /// and the pass is reported.
    let isReported: Bool
}
