import Foundation
import TestSupport
import Testing

/// Dispatch's main queue and the main actor on `Loop.main`: each scenario of the `main-loop-check` executable
/// runs in a child process, whose main thread is the real main thread (test functions never run there).
@Suite struct MainQueueTests {
    @Test func mainQueueWorkFromAnotherThreadWakesTheSleepingMainLoop() throws {
        let figures = try MainLoopCheck.run("wake")
        TestFigures.report("[main-loop-check] wake:\(figures)")
        // Generous: the figure itself goes in Docs; the test only rules out "woken by something else, later".
        #expect(try MainLoopCheck.value("wake_median_us", in: figures) < 100_000)
    }

    static let scenarios: [CheckScenario] = [
        CheckScenario(
            name: "main-actor", shows: "a main-actor function awaited from a detached task runs on the main loop"),
        CheckScenario(name: "non-common-mode", shows: "nothing is served in a mode that is not common"),
        CheckScenario(name: "fifo", shows: "main-queue work runs in order"),
        CheckScenario(name: "stress", shows: "a hundred thousand items from four threads run exactly once"),
        CheckScenario(name: "nested-run", shows: "a run nested in main-queue work does not drain it again"),
        CheckScenario(
            name: "handled-source",
            shows: "draining the main queue counts as a handled source, and as one drain in the loop's metrics"),
        CheckScenario(
            name: "script-ends",
            shows: "a script's main run ends when its items are done if the main queue does not keep it alive"),
        CheckScenario(
            name: "main-task", shows: "a main-actor task started from synchronous main runs inside the main loop"),
        CheckScenario(name: "assume-isolated", shows: "a handler on the main loop can assume main-actor isolation"),
        CheckScenario(name: "opt-out", shows: "the main loop can ignore the main queue"),
        CheckScenario(
            name: "host-serves-main-queue",
            shows: "a poll() host that serves the main queue itself: each block runs once, by the host"),
        CheckScenario(
            name: "drained-behind-the-loop",
            shows: "main-queue work drained by someone else after the loop was told of it is not drained again"),
        CheckScenario(
            name: "hand-over-latency",
            shows: "each main-queue drain is a hand-over sample, counted from the wait that reported the work"),
        CheckScenario(
            name: "main-actor-handlers",
            shows: "@MainActor handlers of every item kind run on Loop.main; other loops refuse them"),
    ]

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: CheckScenario) throws {
        _ = try MainLoopCheck.run(scenario.name)
    }
}
