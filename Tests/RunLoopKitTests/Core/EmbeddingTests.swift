import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// A loop driven by a host event loop: a plain `poll()` loop on the loop's thread waits on `pollDescriptor` and
/// calls `runPass()`. A signal from another thread, a block from another thread, a timer and a descriptor source
/// all reach their handlers through the host, and every host wait ends because the descriptor became readable
/// (none by the wait's time limit).
@Suite struct EmbeddingTests {
    /// What the host loop saw.
    final class HostReport: Sendable {
        let events = Recorder<String>()
        let waitsTimedOut = Counter()
        let waits = Counter()
        let loop = Box<Loop>()
    }

    /// Runs a `poll()` host loop on a new thread until `done` holds, with each wait limited to 10 s.
    static func startHost(
        report: HostReport, setUp: @escaping @Sendable (Loop) -> Void, done: @escaping @Sendable () -> Bool
    ) -> TestThread {
        TestThread {
            let loop = Loop.current
            setUp(loop)
            report.loop.value = loop
            let deadline = ContinuousClock.now + .seconds(30)
            while !done() && ContinuousClock.now < deadline {
                if loop.runPass() || done() { continue }
                var entry = pollfd(fd: loop.pollDescriptor, events: Int16(POLLIN), revents: 0)
                report.waits.increment()
                if poll(&entry, 1, 10_000) == 0 { report.waitsTimedOut.increment() }
            }
        }
    }

    @Test func aHostPollLoopDeliversSignalsBlocksTimersAndDescriptors() throws {
        let report = HostReport()
        let pipe = Pipe()
        defer { pipe.close() }
        let source = LoopSource { _ in report.events.append("signal") }
        let timer = try LoopTimer(after: .milliseconds(50)) { _ in report.events.append("timer") }
        let descriptor = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            pipe.drain()
            report.events.append("descriptor")
        }
        let host = Self.startHost(
            report: report,
            setUp: { loop in
                try! loop.add(source)
                try! loop.add(timer)
                try! loop.add(descriptor)
            }, done: { report.events.count >= 4 })
        #expect(waitUntil { report.loop.value?.isWaiting == true })
        let loop = report.loop.value!

        source.signal()
        #expect(waitUntil { report.events.all.contains("signal") })
        #expect(waitUntil { loop.isWaiting })
        loop.perform { report.events.append("block") }
        #expect(waitUntil { report.events.all.contains("block") })
        #expect(waitUntil { loop.isWaiting })
        pipe.write()
        host.join()

        #expect(Set(report.events.all) == ["signal", "timer", "descriptor", "block"])
        #expect(report.waitsTimedOut.current == 0, "a host wait ended by its time limit: a lost wake-up")
        #expect(report.waits.current >= 3)
        source.invalidate()
        descriptor.invalidate()
    }

    /// A `poll()` host on a new thread that waits for one signal: its loop has one source, whose handler sets
    /// `handled`. The host reads `pollDescriptor` once and keeps it; `prepare` runs next (before the host's first
    /// wait), then the host waits and runs passes until the source was handled, counting waits that ended by their
    /// time limit (a lost wake-up).
    final class SignalHost: Sendable {
        let handled = ItemsSupport.Flag()
        let waitsTimedOut = Counter()
        let source = Box<LoopSource>()
        let loop = Box<Loop>()
        /// Set once `prepare` returned: the host is about to wait.
        let prepared = ItemsSupport.Flag()
        private let thread = Box<TestThread>()

        init(prepare: @escaping @Sendable (Loop) -> Void) {
            thread.value = TestThread { [self] in
                let loop = Loop.current
                self.loop.value = loop
                let source = LoopSource { [handled] _ in handled.set() }
                try! loop.add(source)
                self.source.value = source
                var entry = pollfd(fd: loop.pollDescriptor, events: Int16(POLLIN), revents: 0)  // Read once.
                prepare(loop)
                prepared.set()
                let deadline = ContinuousClock.now + .seconds(30)
                while !handled.isSet && ContinuousClock.now < deadline {
                    if poll(&entry, 1, 5_000) == 0 { waitsTimedOut.increment() }
                    while loop.runPass() {}
                }
                source.invalidate()
            }
        }

        /// Signals the source from this thread once the host is prepared, and checks that the host's wait ended
        /// because the descriptor became readable (never by its time limit).
        func signalAndExpectDelivery(whenAlso condition: @escaping @Sendable () -> Bool = { true }) {
            #expect(waitUntil { self.prepared.isSet })
            #expect(waitUntil(condition))
            source.value!.signal()
            thread.value!.join()
            #expect(handled.isSet)
            #expect(waitsTimedOut.current == 0, "a host wait ended by its time limit, not by the descriptor")
        }
    }

    /// The host starts waiting before the loop's first pass, with no priming `runPass()`: a signal from another
    /// thread still reaches the handler, because reading `pollDescriptor` made it readable until the first pass.
    /// (Before, nothing ever made it readable: the loop had not announced a sleep, so the signal wrote no eventfd.)
    @Test func aHostThatWaitsBeforeTheFirstPassMissesNothing() throws {
        SignalHost { _ in }.signalAndExpectDelivery()
    }

    /// Between two of its passes, the app runs the loop itself (`run(in:for:)` from a host callback): that run ends
    /// awake, with no sleep announced, so a signal sent afterwards from another thread writes no eventfd. The run's
    /// end makes the descriptor readable instead; the host's next pass readies the loop, and the signal then ends the
    /// host's wait. (Before, the host slept until its time limit.) The signal here comes at once after the run, while
    /// the loop is still awake.
    @Test func aRunOfTheLoopsOwnBetweenHostPassesLeavesTheDescriptorWorking() throws {
        SignalHost { loop in
            while loop.runPass() {}
            loop.run(in: .default, for: .milliseconds(5))  // The source keeps the mode alive for the run.
        }.signalAndExpectDelivery()
    }

    /// The same, with the signal sent only once the host sleeps again after the run: the pass that the run's end
    /// caused readied the loop, so the signal writes the eventfd.
    @Test func afterARunOfItsOwnTheHostSleepsAndIsWokenBySignals() throws {
        let host = SignalHost { loop in
            while loop.runPass() {}
            loop.run(in: .default, for: .milliseconds(5))
        }
        host.signalAndExpectDelivery(whenAlso: { host.loop.value!.isWaiting })
    }

    /// The host's own code makes work on the loop's thread between two passes (a block, a 5 ms timer): the
    /// descriptor becomes readable, so the host's wait ends and its passes run both. (Before, the block only queued
    /// locally and the timer armed nothing: the host slept until an unrelated wake-up.)
    @Test func workMadeOnTheLoopsThreadBetweenPassesEndsTheHostsWait() throws {
        let outcome = Box<(blockRan: Bool, timerFired: Bool, waitsEndedByTimeLimit: Int)>()
        let thread = TestThread {
            let loop = Loop.current
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive)
            var timedOut = 0
            /// Waits up to 5 s for the descriptor, then runs passes until none is ready.
            func waitAndPass() {
                var entry = pollfd(fd: loop.pollDescriptor, events: Int16(POLLIN), revents: 0)
                if poll(&entry, 1, 5_000) == 0 { timedOut += 1 }
                while loop.runPass() {}
            }
            while loop.runPass() {}
            let ran = ItemsSupport.Flag()
            loop.perform { ran.set() }  // Between passes, on the loop's thread.
            waitAndPass()
            let fired = ItemsSupport.Flag()
            try! loop.add(try! LoopTimer(after: .milliseconds(5)) { _ in fired.set() })
            waitAndPass()  // The pass that arms the timerfd.
            if !fired.isSet { waitAndPass() }  // The timer's.
            outcome.value = (ran.isSet, fired.isSet, timedOut)
            keepAlive.invalidate()
        }
        thread.join()
        let result = try #require(outcome.value)
        #expect(result.blockRan)
        #expect(result.timerFired)
        #expect(result.waitsEndedByTimeLimit == 0)
    }

    @Test func aHostWaitsWhileTheLoopHasNothingToDo() throws {
        let report = HostReport()
        let stop = ItemsSupport.Flag()
        let host = Self.startHost(report: report, setUp: { _ in }, done: { stop.isSet })
        #expect(waitUntil { report.loop.value?.isWaiting == true })
        let waitsBefore = report.waits.current
        // An idle loop: the host sleeps in poll() instead of spinning through passes.
        #expect(!waitUntil(timeout: .milliseconds(200)) { report.waits.current > waitsBefore + 1 })
        stop.set()
        report.loop.value!.wakeUp()
        host.join()
        #expect(report.waitsTimedOut.current == 0)
    }
}
