import Foundation
import TestSupport
import Testing

/// The GLib bridge on the process's real main thread, where Dispatch's main queue and the main actor live and GLib's
/// default context is iterated: each scenario of the `glib-check` executable runs in a child process.
@Suite(.enabled(if: GLibTesting.isAvailable, "GLib is not installed"))
struct GLibMainThreadTests {
    static let scenarios: [CheckScenario] = [
        CheckScenario(
            name: "attached",
            shows: "GLib owns the main thread: main-queue work (queued before the run, and from another thread) and "
                + "main-actor calls run inside g_main_loop_run"),
        CheckScenario(
            name: "driven",
            shows: "Loop.main.run() drives GLib's default context: a timeout, a child watch, a GIO read, main-queue "
                + "work and a main-actor call"),
        CheckScenario(name: "idle-attached", shows: "an idle GLib main loop with Loop.main attached uses under 1% CPU"),
        CheckScenario(name: "idle-driven", shows: "an idle Loop.main driving GLib's default context uses under 1% CPU"),
    ]

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: CheckScenario) throws {
        let figures = try TestExecutable.passingFigures(of: "glib-check", scenario.name)
        TestFigures.report("[glib-check] PASS \(scenario.name)\(figures)")
    }
}
