import Testing

@testable import RunLoopKit

/// The watchdog's judgement with `consecutiveChecks: N`, driven directly: the heartbeat gets real beats and the
/// checks get chosen times, so the count of checks, not the scheduling of a timer thread, decides.
@Suite struct StallMonitorConsecutiveChecksTests {
    static let threshold: Duration = .milliseconds(100)
    static let checks = 4

    /// A watchdog over a fresh heartbeat, and the heartbeat.
    static func makeWatchdog() -> (StallMonitor.Watchdog, StallMonitor.Heartbeat) {
        let heartbeat = StallMonitor.Heartbeat(loop: Loop.current)
        let watchdog = StallMonitor.Watchdog(heartbeat: heartbeat, threshold: threshold, consecutiveChecks: checks)
        return (watchdog, heartbeat)
    }

    /// The time of the `index`-th check (from 1) of a busy period that began at `since`: every check is already
    /// past the threshold, so only the number of checks in a row can hold a report back.
    static func check(_ index: Int, after since: Loop.Instant) -> Loop.Instant {
        since + threshold + (threshold / checks) * (index - 1)
    }

    @Test func aStallSeenByFewerThanNChecksInARowIsNotReported() throws {
        let (watchdog, heartbeat) = Self.makeWatchdog()
        heartbeat.beat(.afterWaiting)
        let since = try #require(heartbeat.load()).since
        for index in 1..<Self.checks {
            #expect(watchdog.check(now: Self.check(index, after: since)) == nil)
        }
        // The loop goes to sleep before the N-th check: the stall ended, and the sightings start over.
        heartbeat.beat(.beforeWaiting)
        #expect(watchdog.check(now: Self.check(Self.checks, after: since)) == nil)
        heartbeat.beat(.afterWaiting)
        let next = try #require(heartbeat.load()).since
        for index in 1..<Self.checks {
            #expect(watchdog.check(now: Self.check(index, after: next)) == nil)
        }
    }

    @Test func aStallSeenByNChecksInARowIsReportedExactlyOnce() throws {
        let (watchdog, heartbeat) = Self.makeWatchdog()
        heartbeat.beat(.beforeSources)
        let beat = try #require(heartbeat.load())
        var reports: [(index: Int, duration: Duration)] = []
        for index in 1...(3 * Self.checks) {
            let now = Self.check(index, after: beat.since)
            if let stall = watchdog.check(now: now) {
                #expect(stall.beat == beat)
                reports.append((index, stall.duration))
            }
        }
        #expect(reports.map(\.index) == [Self.checks])
        #expect(reports.first?.duration == Self.check(Self.checks, after: beat.since) - beat.since)
        // A new busy activity is a new stall: reported again after N more checks.
        heartbeat.beat(.afterWaiting)
        let next = try #require(heartbeat.load())
        let again = (1...Self.checks).map { watchdog.check(now: Self.check($0, after: next.since)) != nil }
        #expect(again == Array(repeating: false, count: Self.checks - 1) + [true])
    }

    @Test func checksBeforeTheThresholdDoNotCompleteAStall() throws {
        let (watchdog, heartbeat) = Self.makeWatchdog()
        heartbeat.beat(.afterWaiting)
        let since = try #require(heartbeat.load()).since
        let interval = Self.threshold / Self.checks
        // N checks in a row, all before the threshold: sighted, not reported.
        for index in 0..<Self.checks {
            #expect(watchdog.check(now: since + interval * index) == nil)
        }
        // The next check, at the threshold, has N sightings behind it and reports.
        let report = try #require(watchdog.check(now: since + Self.threshold))
        #expect(report.duration == Self.threshold)
    }
}
