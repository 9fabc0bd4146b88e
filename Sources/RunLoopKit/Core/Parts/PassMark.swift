/// Where a pass began, taken at its start: its end measures the pass from it. Loop thread only, on the stack.
struct PassMark {
    /// When the pass began (the end of the previous pass of its run, or the run's start).
    let startedAt: Int64
    /// The loop's asleep total then: what the pass slept is the difference at its end.
    let asleep: Int64
    /// The callouts counted then, while a pass handler is set (`nil`: no figures to report).
    let handled: Loop.HandledCounts?
}
