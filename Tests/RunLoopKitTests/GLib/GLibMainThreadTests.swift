import Foundation
import Testing

/// The GLib bridge on the process's real main thread, where Dispatch's main queue and the main actor live and GLib's
/// default context is iterated: each scenario of the `glib-check` executable runs in a child process.
@Suite(.enabled(if: GLibTesting.isAvailable, "GLib is not installed"))
struct GLibMainThreadTests {
    /// A `glib-check` scenario, which checks itself in the child and answers "PASS" only if all it shows held.
    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        let shows: String
        var testDescription: String { "\(name): \(shows)" }
    }

    static let scenarios = [
        Scenario(
            name: "attached",
            shows: "GLib owns the main thread: main-queue work (queued before the run, and from another thread) and "
                + "main-actor calls run inside g_main_loop_run"),
        Scenario(
            name: "driven",
            shows: "Loop.main.run() drives GLib's default context: a timeout, a child watch, a GIO read, main-queue "
                + "work and a main-actor call"),
        Scenario(name: "idle-attached", shows: "an idle GLib main loop with Loop.main attached uses under 1% CPU"),
        Scenario(name: "idle-driven", shows: "an idle Loop.main driving GLib's default context uses under 1% CPU"),
    ]

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: Scenario) throws {
        let (status, text) = try TestExecutable.run("glib-check", arguments: [scenario.name])
        let verdict = text.split(separator: "\n").last.map(String.init) ?? ""
        guard status == 0, verdict.hasPrefix("PASS \(scenario.name)") else {
            throw TestExecutable.Failure(description: "\(scenario.name): exit \(status), output:\n\(text)")
        }
        TestFigures.report("[glib-check] \(verdict)")
    }
}
