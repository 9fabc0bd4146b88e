import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// A loop on virtual time: its timers, callbacks and deadlines follow its own clock, which moves when the loop is
/// durably idle or when the test advances it (Docs/TestingAndDiagnosing.md). Nothing here reads the wall clock.
@Suite struct VirtualTimeTests {
    /// Seconds of virtual time since the loop's start (0 ns), for readable expectations.
    static func seconds(_ loop: Loop) -> Double { Double(loop.now.nanoseconds) / 1e9 }

    @Test func aVirtualLoopStartsAtZeroAndFollowsItsOwnClock() {
        Loop.withVirtualTime { loop in
            #expect(loop.isVirtual)
            #expect(Loop.current === loop)
            #expect(loop.now == Loop.Instant(nanoseconds: 0))
            #expect(Loop.Instant.now == loop.now)
            #expect(loop.clock.now == loop.now)
            #expect(loop.advancesWhenIdle)
        }
        #expect(!Loop.current.isVirtual)
        #expect(!Loop.current.advancesWhenIdle)
    }

    @Test func oneShotAndRepeatingTimersFireAtTheirVirtualTimes() throws {
        let fired = Recorder<String>()
        try Loop.withVirtualTime { loop in
            try loop.add(try LoopTimer(after: .seconds(30)) { _ in fired.append("once@\(Self.seconds(loop))") })
            let ticks = Counter()
            try loop.add(
                try LoopTimer(after: .seconds(10), repeating: .seconds(10)) { timer in
                    fired.append("tick@\(Self.seconds(loop))")
                    if ticks.increment() == 4 { timer.invalidate() }
                })
            loop.run()  // Ends when both are done: the mode is empty then.
            #expect(loop.now == Loop.Instant(nanoseconds: 40_000_000_000))
        }
        #expect(fired.all == ["tick@10.0", "tick@20.0", "once@30.0", "tick@30.0", "tick@40.0"])
    }

    @Test func aToleranceLetsTheClockJumpToTheLatestFireTime() throws {
        let fired = Recorder<Double>()
        try Loop.withVirtualTime { loop in
            try loop.add(
                try LoopTimer(after: .seconds(10), tolerance: .seconds(2)) { _ in fired.append(Self.seconds(loop)) })
            try loop.add(try LoopTimer(after: .seconds(11)) { _ in fired.append(Self.seconds(loop)) })
            loop.run()
        }
        // The first one's latest time is 12 s; the second one, due at 11 s, is woken for first.
        #expect(fired.all == [11, 11])
    }

    @Test func missedFireTimesOfARepeatingTimerAreSkipped() throws {
        let fired = Recorder<Double>()
        try Loop.withVirtualTime { loop in
            try loop.add(
                try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { timer in
                    fired.append(Self.seconds(loop))
                    if fired.count == 1 {
                        // A handler that takes 3.5 s of the loop's time: the advance runs the loop nested.
                        try? loop.advance(by: .milliseconds(3_500))
                    } else if fired.count == 3 {
                        timer.invalidate()
                    }
                })
            loop.run()
        }
        #expect(fired.all == [1, 5, 6])
    }

    @Test func scheduleAfterAndAtFollowTheLoopsTime() throws {
        let ran = Recorder<String>()
        try Loop.withVirtualTime { loop in
            try loop.schedule(after: .seconds(5)) { ran.append("after@\(Self.seconds(loop))") }
            try loop.schedule(at: Loop.Instant(nanoseconds: 2_000_000_000)) { ran.append("at@\(Self.seconds(loop))") }
            let cancelled = try loop.schedule(after: .seconds(3)) { ran.append("cancelled") }
            loop.cancel(cancelled)
            loop.run()
        }
        #expect(ran.all == ["at@2.0", "after@5.0"])
    }

    /// The loop-thread view's `after:` forms count from the loop's time, as `Loop.schedule(after:)` does; their
    /// handlers may touch state that is not `Sendable`.
    @Test func theIsolatedViewsAfterFormsFollowTheLoopsTime() throws {
        final class Log { var entries: [String] = [] }  // Not Sendable: only the isolated view may capture it.
        let log = Log()
        try Loop.withVirtualTime(startingAt: Loop.Instant(nanoseconds: 100_000_000_000)) { loop in
            let view = loop.assumeIsolated()
            try view.schedule(after: .seconds(5)) { log.entries.append("callback@\(Self.seconds(loop))") }
            try loop.add(
                try view.makeTimer(after: .seconds(7)) { _ in log.entries.append("timer@\(Self.seconds(loop))") })
            loop.run()
        }
        #expect(log.entries == ["callback@105.0", "timer@107.0"])
    }

    @Test func aTimedRunEndsAtItsVirtualDeadline() throws {
        try Loop.withVirtualTime { loop in
            let source = LoopSource { _ in }
            try loop.add(source)  // Keeps the run alive with nothing to do.
            let result = loop.run(in: .default, for: .seconds(90))
            #expect(result == .timedOut)
            #expect(loop.now == Loop.Instant(nanoseconds: 90_000_000_000))
            source.invalidate()
        }
    }

    @Test func manualModeMovesTimeOnlyWhenAdvanced() throws {
        let ran = Recorder<String>()
        try Loop.withVirtualTime(advancesWhenIdle: false) { loop in
            #expect(!loop.advancesWhenIdle)
            try loop.add(
                try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _ in
                    ran.append("tick@\(Self.seconds(loop))")
                })
            loop.perform { ran.append("block@\(Self.seconds(loop))") }
            try loop.runUntilIdle()
            #expect(ran.all == ["block@0.0"])
            #expect(loop.now == Loop.Instant(nanoseconds: 0))

            try loop.advance(by: .milliseconds(2_500))
            #expect(ran.all == ["block@0.0", "tick@1.0", "tick@2.0"])
            #expect(loop.now == Loop.Instant(nanoseconds: 2_500_000_000))

            try loop.advance(to: Loop.Instant(nanoseconds: 3_000_000_000))
            #expect(ran.all.last == "tick@3.0")
        }
    }

    @Test func runUntilIdleRunsWhatWorkMakesWithoutMovingTime() throws {
        let ran = Recorder<String>()
        try Loop.withVirtualTime { loop in
            loop.perform {
                ran.append("first")
                loop.perform { ran.append("second") }
                _ = try? loop.schedule(after: .zero) { ran.append("callback now") }
                _ = try? loop.schedule(after: .seconds(1)) { ran.append("callback later") }
            }
            try loop.runUntilIdle()
            #expect(ran.all == ["first", "callback now", "second"])  // Pass order: due callbacks, then new blocks.
            #expect(loop.now == Loop.Instant(nanoseconds: 0))
            try loop.advance(by: .seconds(1))
            #expect(ran.all.last == "callback later")
        }
    }

    @Test func advancingAnEmptyModeSetsTheClockAndFiresTimersThatDoNotKeepRunsAlive() throws {
        let fired = Recorder<Double>()
        try Loop.withVirtualTime { loop in
            try loop.advance(by: .seconds(7))
            #expect(loop.now == Loop.Instant(nanoseconds: 7_000_000_000))
            let probe = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _ in
                fired.append(Self.seconds(loop))
            }
            probe.keepsRunAlive = false
            try loop.add(probe)
            try loop.advance(by: .seconds(3))
            probe.invalidate()
        }
        #expect(fired.all == [8, 9, 10])
    }

    @Test func misuseIsATypedError() throws {
        let real = Loop.current
        #expect(throws: LoopError.self) { try real.advance(by: .seconds(1)) }
        do throws(LoopError) {
            try real.runUntilIdle()
            Issue.record("runUntilIdle on a real loop did not throw")
        } catch {
            #expect(error.code == .notVirtual)
        }
        try Loop.withVirtualTime { loop in
            try loop.advance(by: .seconds(10))
            do throws(LoopError) {
                try loop.advance(to: Loop.Instant(nanoseconds: 1))
                Issue.record("advancing backwards did not throw")
            } catch {
                #expect(error.code == .invalidArgument)
            }
            do throws(LoopError) {
                try loop.advance(by: .seconds(-1))
                Issue.record("a negative advance did not throw")
            } catch {
                #expect(error.code == .invalidArgument)
            }
            do throws(LoopError) {
                try loop.advance(by: .seconds(1), in: .common)
                Issue.record("advancing Mode.common did not throw")
            } catch {
                #expect(error.code == .invalidMode)
            }
            #expect(loop.now == Loop.Instant(nanoseconds: 10_000_000_000))
        }
    }

    @Test func advancingFromAnotherThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var options = LoopThread.Options()
            options.virtualTime = true
            let thread = try LoopThread(options: options)
            try thread.loop.advance(by: .seconds(1))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("advance(by:in:) must be called on the loop's own thread"))
    }

    @Test func theThreadGetsItsFormerLoopBack() throws {
        let former = Loop.current
        let virtual = Loop.withVirtualTime { $0 }
        #expect(Loop.current === former)
        #expect(virtual.isTerminated)
        #expect(Loop.Instant.now.nanoseconds > 0)  // The monotonic clock again: the time since boot.
    }
}
