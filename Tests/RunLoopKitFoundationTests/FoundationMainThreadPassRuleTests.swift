import TestSupport
import Testing

/// The Foundation bridge's "run another pass" rule on the process's real main thread, with the real Foundation
/// (issue 41): work that only a further pass can serve is served within 2 s with no other wake-up, while Foundation
/// is kept busy by a source of its own and so never reaches the observers that would ask for a pass anyway. The
/// scenario of `foundation-check` runs in a child process.
@Suite struct FoundationMainThreadPassRuleTests {
    static let scenarios: [CheckScenario] = [
        CheckScenario(
            name: "pass-rules-foundation-owns",
            shows: "under CFRunLoopRunInMode with Loop.main bridged and Foundation busy with a version-0 source, "
                + "chains of blocks, source performs and zero-delay timers started in a Timer's callout complete "
                + "within 2 s"),
        CheckScenario(
            name: "pass-rules-nested-own-run",
            shows: "in a CFRunLoopRunInMode nested in a block of Loop.main.run, after a Timer's callout ran the loop "
                + "for 5 ms, a block another thread posts 100 ms later runs at once"),
    ]

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: CheckScenario) throws {
        let figures = try TestExecutable.passingFigures(of: "foundation-check", scenario.name)
        TestFigures.report("[foundation-check] PASS \(scenario.name)\(figures)")
    }
}
