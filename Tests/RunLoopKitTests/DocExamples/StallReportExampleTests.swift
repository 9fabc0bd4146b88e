import Glibc
import RunLoopKit
import Testing

@Test(.timeLimit(.minutes(1))) func theSlowJobIsNamedInTheStallReport() async throws {
    let worker = try LoopThread(name: "worker")
    defer { worker.stop() }
    try worker.loop.enableFlightRecorder(passes: 16, calloutsPerPass: 32)
    let (reports, reported) = AsyncStream.makeStream(of: StallMonitor.Report.self)
    let monitor = try StallMonitor(loop: worker.loop, threshold: .milliseconds(100)) { reported.yield($0) }
    defer { monitor.stop() }
    try await worker.run {}  // The monitor's observers are in place on the worker from here on.

    for job in 1...3 {
        worker.perform { _ = (1...1_000).reduce(job, +) }  // Quick jobs.
    }
    let slowLine = #line + 1
    worker.perform { usleep(500_000) }  // The one slow job: half a second.

    // The report comes while the slow job still runs. (On a machine under heavy load, a quick job that was kept
    // off the CPU can be reported as well: look for the slow one.)
    let report = try #require(await reports.first { $0.longestCallouts.first?.line == slowLine })
    let slowest = try #require(report.longestCallouts.first)
    #expect(slowest.kind == .block)
    #expect(slowest.file == "RunLoopKitTests/StallReportExampleTests.swift")
    #expect(slowest.isInProgress)
    // The stall counts from the loop's last heartbeat, which came before the pass ran its blocks: the slow callout
    // has run for part of it (less by what the quick jobs took, when they ran in the same pass).
    #expect(report.duration >= .milliseconds(100))
    #expect(slowest.duration > .zero)
    #expect(report.recording?.passes.last?.isInProgress == true)  // The stalled pass, recorded so far.
}
