import Foundation
import Testing

/// The Foundation bridge on the process's real main thread, with the real Foundation (Dispatch's main queue,
/// `Timer`, `RunLoop.perform`, `NotificationQueue`, `FileHandle`): each scenario of the `foundation-check` executable
/// runs in a child process.
@Suite struct FoundationMainThreadTests {
    /// A `foundation-check` scenario, which checks itself in the child and answers "PASS" only if all it shows held.
    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        let shows: String
        var testDescription: String { "\(name): \(shows)" }
    }

    static let scenarios = [
        Scenario(
            name: "unbridged",
            shows:
                "without the bridge, Foundation's Timer never fires under Loop.main, nor a LoopTimer under RunLoop.main"
        ),
        Scenario(
            name: "foundation-owns",
            shows: "under RunLoop.main: a LoopTimer next to a Foundation Timer (~100/s each), a signal, a block and a "
                + "descriptor from another thread (read one byte per call, edge-triggered), main-queue work served by "
                + "Foundation alone, a nested Loop.main.run(in:for:) that keeps Foundation's timers going"),
        Scenario(
            name: "loop-owns",
            shows:
                "under Loop.main: Foundation's Timer, RunLoop.perform, NotificationQueue, readInBackgroundAndNotify, "
                + "a nested RunLoop.main.run(until:) that keeps the loop's timers going, and other threads' Timers"),
        Scenario(name: "idle-foundation-owns", shows: "idle under RunLoop.main: under 1% CPU, no pass of the loop"),
        Scenario(name: "idle-loop-owns", shows: "idle under Loop.main: under 1% CPU, no wake-up"),
        Scenario(
            name: "latency",
            shows: "another thread → handler, bridged vs Loop.main alone vs Foundation's perform (figures only)"),
    ]

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: Scenario) throws {
        let (status, text) = try TestExecutable.run("foundation-check", arguments: [scenario.name])
        let verdict = text.split(separator: "\n").last.map(String.init) ?? ""
        guard status == 0, verdict.hasPrefix("PASS \(scenario.name)") else {
            throw TestExecutable.Failure(description: "\(scenario.name): exit \(status), output:\n\(text)")
        }
        TestFigures.report("[foundation-check] \(verdict)")
    }
}
