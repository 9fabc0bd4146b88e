import Foundation
import TestSupport
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

    /// swift-corelibs-foundation's own tests of the main run loop (foundation-check's Upstream folder), under each
    /// owner of the thread, without the bridge (the reference), with it, and with it and loop items alive: each
    /// requires the same tests to pass (foundation-check's UpstreamScenario.swift lists the few that cannot, and why).
    static let upstreamScenarios: [CheckScenario] = ["foundation", "loop"].flatMap { owner in
        [
            ("unbridged", "without the bridge (the reference)"),
            ("bridged", "with the bridge"),
            ("bridged-items", "with the bridge and a 10 ms LoopTimer, two sources and an observer alive"),
        ].map { setting, what in
            CheckScenario(
                name: "upstream-\(owner)-owns-\(setting)",
                shows: "swift-corelibs-foundation 6.3.1's TestRunLoop, TestTimer, TestNotificationQueue, "
                    + "TestNotificationCenter, TestThread, TestSocketPort, TestOperationQueue, TestFileHandle's "
                    + "background notifications under "
                    + "\(owner == "loop" ? "Loop.main.run()" : "RunLoop.main") \(what)")
        }
    }

    @Test(arguments: scenarios)
    func theScenarioPassesOnTheRealMainThread(_ scenario: CheckScenario) throws {
        let figures = try TestExecutable.passingFigures(of: "foundation-check", scenario.name)
        TestFigures.report("[foundation-check] PASS \(scenario.name)\(figures)")
    }

    /// Whether this process runs under ThreadSanitizer (whose runtime it then exports): swift-corelibs-foundation's
    /// `NotificationQueue.default` on a `Thread` of its own (TestNotificationQueue.test_defaultQueue) crashes
    /// ThreadSanitizer's runtime (SEGV at address 0x1048, "nested bug"), with or without the bridge, and the upstream
    /// timing tests miss their bounds at its speed: the upstream scenarios run in the plain build only.
    static let underThreadSanitizer = dlsym(nil, "__tsan_init") != nil

    /// Each takes about 25 s (TestOperationQueue sleeps), waited for without holding a thread of the pool.
    @Test(
        .disabled(if: underThreadSanitizer, "Foundation's NotificationQueue on a Thread crashes ThreadSanitizer"),
        arguments: upstreamScenarios)
    func foundationsOwnTestsPassAlike(_ scenario: CheckScenario) async throws {
        let figures = try await TestExecutable.passingFigures(
            of: "foundation-check", scenario.name, timeout: .seconds(120))
        TestFigures.report("[foundation-check] PASS \(scenario.name)\(figures)")
    }
}
