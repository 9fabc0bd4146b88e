import TestSupport
import Testing

/// The GLib bridge's "run another pass" rules on the process's real main thread (issue 41): work that only a further
/// pass can serve is served within 2 s with no other wake-up. Each scenario of `glib-check` runs in a child process.
@Suite(.enabled(if: GLibTesting.isAvailable, "GLib is not installed"))
struct GLibMainThreadPassRuleTests {
    static let scenarios: [CheckScenario] = [
        CheckScenario(
            name: "pass-rules-attached",
            shows: "under g_main_loop_run with Loop.main attached, chains of blocks, source performs and zero-delay "
                + "timers started by a GLib callback, each link made in a pass for a later one, complete within 2 s"),
        CheckScenario(
            name: "pass-rules-modal",
            shows: "a modal GLib main loop run by a LoopTimer's handler, in a pass: a block queued before it and the "
                + "same chains are served inside it within 2 s"),
        CheckScenario(
            name: "pass-rules-modal-callback",
            shows: "the same modal loop; a block queued by a GLib callback inside it, after a pass there left the "
                + "loop counted as asleep, runs and starts the same chains, all served inside it within 2 s"),
        CheckScenario(
            name: "pass-rules-between-runs",
            shows: "a block queued and a zero-delay timer added by the app between two g_main_loop_runs, with the "
                + "loop counted as asleep, are served in the second run within 2 s"),
    ]

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: CheckScenario) throws {
        let figures = try TestExecutable.passingFigures(of: "glib-check", scenario.name)
        TestFigures.report("[glib-check] PASS \(scenario.name)\(figures)")
    }
}
