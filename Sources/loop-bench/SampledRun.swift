import RunLoopKitSystem

/// The timed window of a wake-latency workload (W5, G1–G3): lets the paced sender go, waits until every sample
/// arrived, joins the sender, and answers the wall and process CPU time the window took.
enum SampledRun {
    /// - Throws: ``BenchmarkFailure`` with `missing()` when the samples did not all arrive within 300 s.
    static func time(
        releasing gate: WaitCounter, until done: WaitCounter, sender: inout JoinableThread?,
        missing: () -> String
    ) throws -> (wall: Int64, cpu: Int64) {
        let wallStart = Clock.monotonic()
        let cpuStart = Clock.processCPU()
        gate.increment()
        guard done.wait() else { throw BenchmarkFailure(missing()) }
        sender?.join()
        sender = nil
        return (Clock.monotonic() - wallStart, Clock.processCPU() - cpuStart)
    }
}
