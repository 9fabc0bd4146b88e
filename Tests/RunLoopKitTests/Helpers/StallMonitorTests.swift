import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Spins for `duration` on the calling thread (a stall, as a long computation would cause).
private func busyWait(_ duration: Duration) {
    let end = Loop.Instant.now + duration
    while Loop.Instant.now < end {}
}

@Suite struct StallMonitorTests {
    @Test func aStallIsReportedOnceWithItsActivityAndDuration() throws {
        let watched = try LoopThread(name: "st-stall")
        defer { watched.stop() }
        let reports = Recorder<StallMonitor.Report>()
        let monitor = try StallMonitor(loop: watched.loop) { reports.append($0) }
        defer { monitor.stop() }
        try watched.performAndWait {}  // The observers are in place.

        let start = Loop.Instant.now
        try watched.performAndWait { busyWait(.milliseconds(300)) }
        let elapsed = Loop.Instant.now - start
        // The watchdog checked about six times during the stall: a repeated report would be here by now.
        #expect(waitUntil { reports.count >= 1 })
        try watched.performAndWait {}
        #expect(reports.count == 1)
        let report = try #require(reports.all.first)
        #expect(report.activity == .afterWaiting || report.activity == .beforeSources)
        #expect(report.duration >= .milliseconds(50))
        #expect(report.duration <= elapsed)
        #expect(report.threshold == .milliseconds(50))
        #expect(report.threadID == watched.threadID)
        #expect(report.threadName == "st-stall")
        #expect(report.mode == .default)
        #expect(report.description.contains("thread \(watched.threadID) \"st-stall\" busy for"))
    }

    @Test func twoStallsGiveTwoReports() throws {
        let watched = try LoopThread(name: "st-twice")
        defer { watched.stop() }
        let reports = Recorder<StallMonitor.Report>()
        let monitor = try StallMonitor(loop: watched.loop, threshold: .milliseconds(40)) { reports.append($0) }
        defer { monitor.stop() }
        try watched.performAndWait {}
        try watched.performAndWait { busyWait(.milliseconds(200)) }
        #expect(waitUntil { reports.count >= 1 })
        try watched.performAndWait { busyWait(.milliseconds(200)) }
        #expect(waitUntil { reports.count >= 2 })
        try watched.performAndWait {}
        #expect(reports.count == 2)
    }

    @Test func aBusyLoopThatNeverStallsIsNotReported() throws {
        let watched = try LoopThread(name: "st-busy")
        defer { watched.stop() }
        let reports = Recorder<StallMonitor.Report>()
        // A threshold far above the 3 ms passes below: a loaded machine that preempts the worker for tens of
        // milliseconds (seen once at the default 50 ms) must not count as a stall; a pass that never ends would.
        let monitor = try StallMonitor(loop: watched.loop, threshold: .milliseconds(500)) { reports.append($0) }
        defer { monitor.stop() }
        try watched.performAndWait {}

        // A chain of 150 blocks of 3 ms (at least 450 ms busy): the loop never sleeps, but goes round every one or
        // two blocks. Counted rather than timed, so a loaded machine makes the chain slower, not shorter.
        let blocks = Counter()
        let done = Box<Bool>(false)
        @Sendable func step() {
            busyWait(.milliseconds(3))
            blocks.increment()
            if blocks.current < 150 { Loop.current.perform(step) } else { done.value = true }
        }
        watched.perform(step)
        #expect(waitUntil(timeout: .seconds(30)) { done.value == true })
        try watched.performAndWait {}
        #expect(blocks.current == 150)
        #expect(reports.count == 0)
    }

    @Test func aSleepingLoopIsNotReported() throws {
        let watched = try LoopThread(name: "st-sleep")
        defer { watched.stop() }
        let reports = Recorder<StallMonitor.Report>()
        let monitor = try StallMonitor(loop: watched.loop) { reports.append($0) }
        defer { monitor.stop() }
        try watched.performAndWait {}
        #expect(waitUntil { watched.loop.isWaiting })
        usleep(500_000)  // The measurement window: ten checks of an idle loop.
        #expect(reports.count == 0)
    }

    @Test func consecutiveChecksAndThresholdFilterShortStalls() throws {
        let watched = try LoopThread(name: "st-checks")
        defer { watched.stop() }
        let reports = Recorder<StallMonitor.Report>()
        let monitor = try StallMonitor(
            loop: watched.loop, threshold: .milliseconds(200), consecutiveChecks: 4
        ) { reports.append($0) }
        #expect(monitor.threshold == .milliseconds(200) && monitor.consecutiveChecks == 4)
        defer { monitor.stop() }
        try watched.performAndWait {}
        try watched.performAndWait { busyWait(.milliseconds(80)) }  // Below the threshold.
        try watched.performAndWait { busyWait(.milliseconds(400)) }
        #expect(waitUntil { reports.count >= 1 })
        try watched.performAndWait {}
        #expect(reports.count == 1)
        #expect(try #require(reports.all.first).duration >= .milliseconds(200))
    }

    @Test func noReportsAfterStop() throws {
        let watched = try LoopThread(name: "st-stopped")
        defer { watched.stop() }
        let reports = Recorder<StallMonitor.Report>()
        let monitor = try StallMonitor(loop: watched.loop) { reports.append($0) }
        try watched.performAndWait {}
        monitor.stop()
        monitor.stop()  // Idempotent.
        try watched.performAndWait { busyWait(.milliseconds(150)) }
        try watched.performAndWait {}
        #expect(reports.count == 0)
    }

    @Test func invalidSettingsThrow() throws {
        let loop = try LoopThread(name: "st-invalid")
        defer { loop.stop() }
        let zero = #expect(throws: LoopError.self) { try StallMonitor(loop: loop.loop, threshold: .zero) }
        #expect(zero?.code == .invalidInterval)
        let checks = #expect(throws: LoopError.self) { try StallMonitor(loop: loop.loop, consecutiveChecks: 0) }
        #expect(checks?.code == .invalidInterval)
    }

    @Test func reportDescriptionIsOneReadableLine() {
        let report = StallMonitor.Report(
            threadID: 4242, threadName: "main", activity: .afterWaiting, mode: .default,
            since: Loop.Instant(nanoseconds: 0), duration: .microseconds(301_250), threshold: .milliseconds(50)
        )
        #expect(
            report.description
                == "RunLoopKit stall: loop of thread 4242 \"main\" busy for 301.2 ms after afterWaiting "
                + "in mode default (threshold 50.0 ms)"
        )
    }
}
