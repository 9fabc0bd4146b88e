import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// Who runs the main thread while the ported upstream tests run.
enum UpstreamOwner: String {
    /// The tests run straight on the main thread; their own `RunLoop` calls run it, as under XCTest.
    case foundation
    /// `Loop.main.run()` runs the thread, and each test runs in a block of its own, so every Foundation run of the
    /// tests is nested in a callout of the loop's.
    case loop
}

/// What the loop has while the tests run.
enum UpstreamSetting: String {
    /// No bridge: Foundation's run loop alone, the reference.
    case unbridged
    /// `Loop.main.bridgeToFoundation()`, nothing else of the loop's.
    case bridged
    /// The bridge and loop items alive all along: a repeating 10 ms `LoopTimer`, a `LoopSource` and a
    /// `FileDescriptorSource` on an idle pipe, and an observer of every pass.
    case items = "bridged-items"
}

/// Tests that fail here whatever the bridge does, with the reason: the scenario requires exactly these to fail, in
/// every owner and setting, so a test the bridge broke or fixed shows.
let upstreamFailingAnyway: [String: String] = [
    "TestThread.test_threadName":
        "expects the main thread's initial name to be upstream's test binary (\"swift-corelibs-\"); here it is "
        + "\"foundation-chec\""
]

/// Tests that fail, as they must, while the loop has a timer alive (``UpstreamSetting/items``): the bridge makes the
/// loop's timers count as timers in Foundation's terms, and a Foundation `Timer` of the same period fails them too.
let upstreamFailingWithLoopTimer: [String: String] = [
    "TestRunLoop.test_runLoopLimitDate":
        "asks RunLoop.limitDate(forMode:) for its 1 s timer's fire date; the bridge's CF timer at the loop's next "
        + "timer (10 ms) comes first, as a 10 ms Foundation Timer would"
]

/// Runs every ported upstream test (UpstreamSuites.swift) on the main thread under `owner` with `setting`; passes
/// if exactly the tests of ``upstreamFailingAnyway`` (and with loop items, of ``upstreamFailingWithLoopTimer``) fail,
/// with the counts per suite (passed/run) as figures.
func upstreamScenario(owner: UpstreamOwner, setting: UpstreamSetting) {
    var keep: [AnyObject] = []
    let ticks = Count()
    if setting != .unbridged {
        do { keep.append(try Loop.main.bridgeToFoundation()) } catch { fail("bridge: \(error)") }
    }
    if setting == .items {
        let timer = try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in ticks.add() }
        try! Loop.main.add(timer, to: .common)
        let source = LoopSource { _ in }
        try! Loop.main.add(source, to: .common)
        let pipe = TestPipe()
        let reader = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
        try! Loop.main.add(reader, to: .common)
        let observer = LoopObserver(activities: [.entry, .exit]) { _, _ in }
        try! Loop.main.add(observer, to: .common)
        keep += [timer, source, reader, observer]
    }
    let tests = upstreamTests
    let results = UpstreamResults()
    let start = uptime()
    switch owner {
    case .foundation:
        for test in tests { results.run(test) }
        results.verdict(ticks: ticks.current, seconds: uptime() - start, setting: setting)
    case .loop:
        /// Runs test `index` in a block of the loop's, then queues the next.
        @Sendable func runTest(_ index: Int) {
            guard index < tests.count else {
                results.verdict(ticks: ticks.current, seconds: uptime() - start, setting: setting)
            }
            results.run(tests[index])
            Loop.main.perform { runTest(index + 1) }
        }
        Loop.main.perform { runTest(0) }
        Loop.main.run()
        fail("Loop.main.run() returned")
    }
}

/// The outcome of each test.
final class UpstreamResults: @unchecked Sendable {
    // Unchecked Sendable: used on the main thread only (the loop's blocks run there).
    private var outcomes: [(suite: String, name: String, failures: [String], skipped: Bool)] = []

    func run(_ test: UpstreamTest) {
        if ProcessInfo.processInfo.environment["RUNLOOPKIT_UPSTREAM_TRACE"] != nil {
            FileHandle.standardError.write(Data("running \(test.suite).\(test.name)\n".utf8))
        }
        recordedFailures.withLock { $0 = [] }
        var skipped = false
        do {
            try test.run()
        } catch is XCTSkip {
            skipped = true
        } catch {
            recordFailure("threw \(error)", #file, #line)
        }
        let failures = recordedFailures.withLock { $0 }
        outcomes.append((test.suite, test.name, failures, skipped))
        for failure in failures { print("  \(test.suite).\(test.name): \(failure)") }
    }

    func verdict(ticks: Int, seconds: Double, setting: UpstreamSetting) -> Never {
        var figures: [String] = []
        var suites: [String] = []
        for outcome in outcomes where !suites.contains(outcome.suite) { suites.append(outcome.suite) }
        for suite in suites {
            let mine = outcomes.filter { $0.suite == suite }
            let failed = mine.filter { !$0.failures.isEmpty }.count
            let skipped = mine.filter(\.skipped).count
            figures.append("\(suite)=\(mine.count - failed - skipped)/\(mine.count)")
            if skipped > 0 { figures[figures.count - 1] += "(\(skipped)_skipped)" }
        }
        figures.append("loop_ticks=\(ticks) seconds=\(rounded(seconds))")
        let failed = Set(outcomes.filter { !$0.failures.isEmpty }.map { "\($0.suite).\($0.name)" })
        var expected = Set(upstreamFailingAnyway.keys)
        if setting == .items { expected.formUnion(upstreamFailingWithLoopTimer.keys) }
        check(
            failed == expected,
            "failed: \(failed.subtracting(expected).sorted()); expected to fail but passed: "
                + "\(expected.subtracting(failed).sorted())")
        pass(figures.joined(separator: " "))
    }
}
