import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// `Loop.reportPasses(to:)`: a handler called at the end of every pass with that pass's figures.
@Suite struct LoopMetricsPassHandlerTests {
    typealias Handled = Loop.HandledCounts

    /// What one test thread saw: the figures reported, and the loop's metrics around them.
    private final class Seen: Sendable {
        let figures = Recorder<Loop.PassFigures>()
        let metrics = Recorder<Loop.Metrics>()
    }

    @Test func theHandlerSeesEachPassOnceAndItsFiguresAddUpToTheTotals() throws {
        let seen = Seen()
        let (_, thread) = startLoopThread { loop in
            let keepAlive = ItemsSupport.keepAlive()
            let source = LoopSource { _ in }
            try! loop.add(keepAlive)
            try! loop.add(source)
            seen.metrics.append(loop.metrics)
            loop.reportPasses { seen.figures.append($0) }
            for _ in 0..<3 {
                source.signal()
                loop.perform {}
                loop.run(in: .default, for: .zero)
            }
            // Passes that sleep: until a timer 20 ms away, then until the run's deadline.
            try! loop.add(try! LoopTimer(after: .milliseconds(20)) { _ in })
            loop.run(in: .default, for: .milliseconds(60))
            loop.reportPasses(to: nil)
            seen.metrics.append(loop.metrics)
            loop.run(in: .default, for: .zero)  // Not reported.
            keepAlive.invalidate()
            source.invalidate()
        }
        thread.join()
        let figures = seen.figures.all
        let metrics = seen.metrics.all
        try #require(metrics.count == 2)
        let (before, after) = (metrics[0], metrics[1])

        #expect(figures.map(\.number) == Array(before.passes + 1...after.passes))
        #expect(figures.allSatisfy { $0.depth == 1 })
        #expect(figures.allSatisfy { $0.slept >= .zero && $0.slept <= $0.duration })
        #expect(figures.map(\.awake).max()! <= after.longestPass)

        var handled = Handled()
        for figure in figures { handled = handled + figure.handled }
        #expect(handled == after.handled - before.handled)
        #expect(handled.sourcesPerformed == 3 && handled.blocksRun == 3 && handled.timersFired == 1)
        let slept = figures.reduce(Int64(0)) { $0 + $1.sleptNanoseconds }
        #expect(slept == after.timeAsleep.nanosecondsForTests - before.timeAsleep.nanosecondsForTests)
        #expect(figures.contains { $0.slept >= .milliseconds(10) })
        // The passes of one run follow each other without a gap.
        let lastRun = figures.suffix(from: 3)
        for (earlier, later) in zip(lastRun, lastRun.dropFirst()) { #expect(later.startedAt == earlier.endedAt) }
        let counted = (after.timeAsleep + after.timeAwake) - (before.timeAsleep + before.timeAwake)
        let reported = figures.reduce(Duration.zero) { $0 + $1.duration }
        #expect(reported <= counted)
        #expect(reported >= .milliseconds(55))
    }

    @Test func aPassOfANestedRunIsReportedInsideItsOuterPass() {
        let seen = Seen()
        let (_, thread) = startLoopThread { loop in
            let keepAlive = ItemsSupport.keepAlive()
            let nesting = LoopSource { _ in
                loop.perform {}
                loop.run(in: .default, for: .zero)  // One nested pass, which runs the block.
            }
            try! loop.add(keepAlive)
            try! loop.add(nesting)
            seen.metrics.append(loop.metrics)
            loop.reportPasses { seen.figures.append($0) }
            nesting.signal()
            loop.run(in: .default, for: .zero)
            loop.reportPasses(to: nil)
            seen.metrics.append(loop.metrics)
            keepAlive.invalidate()
            nesting.invalidate()
        }
        thread.join()
        let figures = seen.figures.all
        let metrics = seen.metrics.all
        #expect(figures.map(\.depth) == [2, 1])
        #expect(figures.map(\.number) == [metrics[0].passes + 1, metrics[0].passes + 2])
        guard figures.count == 2, metrics.count == 2 else { return }
        let (nested, outer) = (figures[0], figures[1])
        #expect(nested.handled == Handled(blocksRun: 1))
        #expect(outer.handled == Handled(sourcesPerformed: 1, blocksRun: 1))
        #expect(outer.startedAt <= nested.startedAt && nested.endedAt <= outer.endedAt)
        // Adding up the outermost passes gives the totals.
        #expect(outer.handled == metrics[1].handled - metrics[0].handled)
    }

    @Test func aHandlerSetOrRemovedFromAnotherThreadTakesEffectBeforeTheLoopsNextPass() throws {
        let worker = try LoopThread(name: "lm-handler")
        defer { worker.stop() }
        let loop = worker.loop
        try worker.performAndWait {}
        let seen = Seen()
        loop.reportPasses { seen.figures.append($0) }
        // The pass that takes the change is not reported (it began before); a block posted after that runs in a
        // pass that is. Posting until then: a pass may take several blocks posted one after another.
        #expect(
            waitUntil {
                _ = try? worker.performAndWait {}
                return seen.figures.all.contains { $0.handled.blocksRun >= 1 }
            })
        #expect(seen.figures.all.allSatisfy { $0.depth == 1 })

        loop.reportPasses(to: nil)
        try worker.performAndWait {}  // Its pass takes the removal with it, and is not reported.
        let count = seen.figures.count
        for _ in 0..<3 { try worker.performAndWait {} }
        #expect(seen.figures.count == count)
    }

    @Test func theHandlerIsNotCalledAgainFromARunNestedInIt() {
        let seen = Seen()
        let (_, thread) = startLoopThread { loop in
            let keepAlive = ItemsSupport.keepAlive()
            try! loop.add(keepAlive)
            seen.metrics.append(loop.metrics)
            loop.reportPasses { figures in
                seen.figures.append(figures)
                if seen.figures.count == 1 { loop.run(in: .default, for: .zero) }  // Counted, not reported.
            }
            loop.run(in: .default, for: .zero)
            loop.run(in: .default, for: .zero)
            loop.reportPasses(to: nil)
            seen.metrics.append(loop.metrics)
            keepAlive.invalidate()
        }
        thread.join()
        let metrics = seen.metrics.all
        let start = metrics.first?.passes ?? 0
        #expect(seen.figures.all.map(\.number) == [start + 1, start + 3])
        #expect(metrics.last?.passes == start + 3)
    }

    @Test func theHandlerMayStopTheRun() {
        let results = Recorder<String>()
        let (_, thread) = startLoopThread { loop in
            let keepAlive = ItemsSupport.keepAlive()
            let spinning = LoopSource { source in source.signal() }  // Keeps the passes coming.
            try! loop.add(keepAlive)
            try! loop.add(spinning)
            let stopAt = loop.metrics.passes + 5
            loop.reportPasses { figures in
                if figures.number == stopAt { loop.stop() }
            }
            spinning.signal()
            results.append("\(loop.run(in: .default, for: .seconds(10)))")
            results.append("stopped after pass \(loop.metrics.passes - stopAt + 5) of 5")
            loop.reportPasses(to: nil)
            keepAlive.invalidate()
            spinning.invalidate()
        }
        thread.join()
        #expect(results.all == ["stopped", "stopped after pass 5 of 5"])
    }
}

extension Loop.HandledCounts {
    /// Each count added up (figures of passes that follow each other make the counts of them all).
    fileprivate static func + (lhs: Self, rhs: Self) -> Self {
        Self(
            sourcesPerformed: lhs.sourcesPerformed + rhs.sourcesPerformed,
            descriptorReports: lhs.descriptorReports + rhs.descriptorReports,
            timersFired: lhs.timersFired + rhs.timersFired, callbacksRun: lhs.callbacksRun + rhs.callbacksRun,
            observerCalls: lhs.observerCalls + rhs.observerCalls, blocksRun: lhs.blocksRun + rhs.blocksRun,
            jobsRun: lhs.jobsRun + rhs.jobsRun, mainQueueDrains: lhs.mainQueueDrains + rhs.mainQueueDrains)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (the tests' durations are far inside `Int64`'s range).
    fileprivate var nanosecondsForTests: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
