import RunLoopKit
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

/// Code under test in the style of a service: a connection that retries after a 30 s back-off, watched by a
/// 5-minute watchdog that gives up. It takes a `Loop` and knows nothing of virtual time.
final class Reconnector: Sendable {
    let loop: Loop
    let log: Recorder<String>
    private let attempt: @Sendable (Int) -> Bool
    private let attempts = Atomic<Int>(0)
    private let watchdog = Locked<LoopTimer?>(nil)

    init(loop: Loop, log: Recorder<String>, attempt: @escaping @Sendable (Int) -> Bool) {
        self.loop = loop
        self.log = log
        self.attempt = attempt
    }

    /// Starts: the first attempt at once, the watchdog 5 minutes from now.
    func start() throws {
        let timer = try LoopTimer(after: .seconds(300)) { [self] _ in log.append("gave up at \(loop.now)") }
        watchdog.withLock { $0 = timer }
        try loop.add(timer)
        try tryOnce()
    }

    private func tryOnce() throws {
        let number = attempts.add(1, ordering: .relaxed).newValue
        if attempt(number) {
            log.append("connected at \(loop.now) after \(number) attempts")
            watchdog.withLock { $0?.invalidate() }
            return
        }
        log.append("attempt \(number) failed at \(loop.now)")
        guard watchdog.withLock({ $0?.isValid ?? false }) else { return }
        try loop.schedule(after: .seconds(30)) { [self] in try? tryOnce() }
    }
}

@Suite struct VirtualTimeScenarioTests {
    static func at(_ seconds: Int64) -> Loop.Instant { Loop.Instant(nanoseconds: seconds * 1_000_000_000) }

    /// Five 30 s back-offs and a 5-minute watchdog: minutes of the code's time, milliseconds of the test's
    /// (Docs/Benchmarks.md, "Virtual time", has the figure; nothing here measures it).
    @Test func fiveBackOffsThenConnectedBeforeTheWatchdog() throws {
        let log = Recorder<String>()
        try Loop.withVirtualTime { loop in
            let client = Reconnector(loop: loop, log: log) { $0 == 6 }
            try client.start()
            loop.run()  // Ends when nothing is left: the watchdog was invalidated on success.
        }
        #expect(
            log.all == [
                "attempt 1 failed at \(Self.at(0))", "attempt 2 failed at \(Self.at(30))",
                "attempt 3 failed at \(Self.at(60))", "attempt 4 failed at \(Self.at(90))",
                "attempt 5 failed at \(Self.at(120))", "connected at \(Self.at(150)) after 6 attempts",
            ])
    }

    @Test func theWatchdogGivesUpAfterFiveMinutes() throws {
        let log = Recorder<String>()
        try Loop.withVirtualTime { loop in
            let client = Reconnector(loop: loop, log: log) { _ in false }
            try client.start()
            loop.run()
        }
        // Attempts at 0, 30, ..., 300 s. At 300 s the watchdog, scheduled first, fires before the eleventh attempt,
        // which then schedules no more.
        #expect(log.count == 12)
        #expect(log.all[10] == "gave up at \(Self.at(300))")
        #expect(log.all.last == "attempt 11 failed at \(Self.at(300))")
    }

    /// The same scenario on a `LoopThread` whose loop is virtual, driven from an async test through the loop's
    /// clock: `loop.clock.sleep` is a timer on the virtual loop.
    @Test func aLoopThreadOnVirtualTimeServesCodeThatUsesLoopCurrent() async throws {
        var options = LoopThread.Options()
        options.virtualTime = true
        let thread = try LoopThread(name: "virtual", options: options)
        defer { thread.stop() }
        #expect(thread.loop.isVirtual)
        let log = Recorder<String>()
        try await thread.run {
            // On the worker: Loop.current is the virtual loop, and `.now` is its time.
            try Reconnector(loop: Loop.current, log: log) { $0 == 6 }.start()
        }
        try await thread.loop.clock.sleep(until: Self.at(600), tolerance: nil)
        #expect(thread.loop.now == Self.at(600))
        #expect(log.all.last == "connected at \(Self.at(150)) after 6 attempts")
    }

    /// Every run of one scenario makes its callouts in the same order: timers due at the same instant, callbacks,
    /// blocks, sources, observers and a repeating timer that skips missed times.
    @Test func theOrderOfCalloutsIsTheSameOnEveryRun() throws {
        func scenario() throws -> [String] {
            let log = Recorder<String>()
            try Loop.withVirtualTime { loop in
                let source = LoopSource { _ in log.append("source@\(loop.now.nanoseconds)") }
                try loop.add(source)
                let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
                    log.append("\(activity)@\(loop.now.nanoseconds)")
                }
                try loop.add(observer)
                for index in 0..<5 {
                    try loop.add(
                        try LoopTimer(after: .seconds(Int64(index % 2 + 1)), order: index) { _ in
                            log.append("timer\(index)@\(loop.now.nanoseconds)")
                            source.signal()
                            loop.perform { log.append("block\(index)") }
                        })
                    try loop.schedule(after: .milliseconds(Int64(1_000 + 250 * index))) {
                        log.append("callback\(index)@\(loop.now.nanoseconds)")
                    }
                }
                let ticks = Counter()
                try loop.add(
                    try LoopTimer(after: .milliseconds(700), repeating: .milliseconds(700)) { timer in
                        log.append("tick@\(loop.now.nanoseconds)")
                        if ticks.increment() == 4 { timer.invalidate() }
                    })
                try loop.advance(by: .seconds(5))
                source.invalidate()
                observer.invalidate()
            }
            return log.all
        }
        let first = try scenario()
        #expect(first.count > 30)
        for _ in 1..<1_000 {
            let again = try scenario()
            guard again == first else {
                Issue.record("a run's callouts differed:\n\(again)\nfirst:\n\(first)")
                return
            }
        }
    }
}
