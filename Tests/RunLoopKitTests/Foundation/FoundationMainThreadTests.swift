import Foundation
import Testing

/// The Foundation bridge on the process's real main thread, with the real Foundation (Dispatch's main queue,
/// `Timer`, `RunLoop.perform`, `NotificationQueue`, `FileHandle`): each scenario of the `foundation-check` executable
/// runs in a child process.
@Suite struct FoundationMainThreadTests {
    static let scenarios: [CheckScenario] = [
        CheckScenario(
            name: "unbridged",
            shows:
                "without the bridge, Foundation's Timer never fires under Loop.main, nor a LoopTimer under RunLoop.main"
        ),
        CheckScenario(
            name: "foundation-owns",
            shows: "under RunLoop.main: a LoopTimer next to a Foundation Timer (~100/s each), a signal, a block and a "
                + "descriptor from another thread (read one byte per call, edge-triggered), main-queue work served by "
                + "Foundation alone, a nested Loop.main.run(in:for:) that keeps Foundation's timers going"),
        CheckScenario(
            name: "loop-owns",
            shows:
                "under Loop.main: Foundation's Timer, RunLoop.perform, NotificationQueue, readInBackgroundAndNotify, "
                + "a nested RunLoop.main.run(until:) that keeps the loop's timers going, and other threads' Timers"),
        CheckScenario(
            name: "same-thread-foundation-owns",
            shows: "under RunLoop.main: a block queued between two runs and in a Timer's callout and a LoopTimer added "
                + "there run at once with no other wake-up; the first run(mode:before:) after the bridge waits its "
                + "50 ms; a 10 ms LoopTimer alive does not end run(mode:before:)"),
        CheckScenario(
            name: "same-thread-loop-owns",
            shows: "the same in Foundation runs nested in a block of Loop.main.run, the first of them included"),
        CheckScenario(
            name: "idle-foundation-owns", shows: "idle under RunLoop.main: under 1% CPU, no pass of the loop"),
        CheckScenario(name: "idle-loop-owns", shows: "idle under Loop.main: under 1% CPU, no wake-up"),
        CheckScenario(
            name: "latency",
            shows: "another thread → handler, bridged vs Loop.main alone vs Foundation's perform (figures only)"),
    ]

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: CheckScenario) throws {
        let figures = try TestExecutable.passingFigures(of: "foundation-check", scenario.name)
        TestFigures.report("[foundation-check] PASS \(scenario.name)\(figures)")
    }
}
