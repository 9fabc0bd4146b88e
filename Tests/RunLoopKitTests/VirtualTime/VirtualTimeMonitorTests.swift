import RunLoopKit
import TestSupport
import Testing

/// The two monitors on a loop on virtual time judge on the loop's clock (Docs/TestingAndDiagnosing.md, "Which clock
/// each part reads"): a stall is a busy stretch during which the loop's time moved, a delay a probe's lateness on
/// the loop's clock. Real CPU time spent in a callout moves neither, so what these tests see is the same on every
/// run and on any machine.
@Suite struct VirtualTimeMonitorTests {
    /// A mode no monitor watches: advancing it from a callout models a handler that takes that much of the loop's
    /// time, as a slow call would on a real loop.
    static let modelledWork = Loop.Mode("modelled work")

    @Test(.timeLimit(.minutes(1))) func aStallIsJudgedOnTheVirtualClock() throws {
        let reports = Recorder<StallMonitor.Report>()
        try Loop.withVirtualTime { loop in
            let monitor = try StallMonitor(loop: loop, threshold: .milliseconds(100)) { reports.append($0) }
            defer { monitor.stop() }
            // Ten minutes of timers and idle jumps: the loop's work takes no virtual time, so nothing stalls.
            for minute in 1...10 { try loop.schedule(after: .seconds(60 * Int64(minute))) {} }
            try loop.advance(by: .seconds(600))
            #expect(reports.count == 0)

            loop.perform {
                // A handler that takes 2 s of the loop's time, then stays until the watchdog has reported it.
                try? loop.advance(by: .seconds(2), in: Self.modelledWork)
                _ = waitUntil(timeout: .seconds(30)) { reports.count > 0 }
            }
            try loop.runUntilIdle()
        }
        #expect(reports.count == 1)
        let report = try #require(reports.all.first)
        #expect(report.since == Loop.Instant(nanoseconds: 600_000_000_000))
        #expect(report.duration == .seconds(2))
    }

    @Test func delaysAreTheProbesLatenessOnTheVirtualClock() throws {
        let delays = try Loop.withVirtualTime { loop in
            let monitor = try LoopDelayMonitor(loop: loop, resolution: .milliseconds(100), wakesIdleLoop: true)
            defer { monitor.stop() }
            try loop.add(
                try LoopTimer(after: .milliseconds(1_050)) { _ in
                    try? loop.advance(by: .milliseconds(250), in: Self.modelledWork)  // 250 ms of the loop's time.
                })
            try loop.advance(by: .seconds(2))
            return monitor.distribution
        }
        // Probes at 0.1 s, 0.2 s, ... on time; the one due at 1.1 s runs at 1.3 s, when the handler returns.
        #expect(delays.minimum == .zero)
        #expect(delays.maximum == .milliseconds(200))
        #expect(delays.count == 18)  // 0.1 ... 1.1, then 1.4 ... 2.0: the missed 1.2 and 1.3 are skipped.
    }
}
