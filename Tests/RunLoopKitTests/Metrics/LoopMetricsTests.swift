import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// Spins on the calling thread until `done()` holds and at least `minimum` has passed (at most 20 s): a handler
/// that keeps its loop busy.
private func busyWait(atLeast minimum: Duration, until done: () -> Bool = { true }) {
    let start = Loop.Instant.now
    while true {
        let elapsed = Loop.Instant.now - start
        if elapsed >= .seconds(20) || (elapsed >= minimum && done()) { return }
    }
}

/// `Loop.metrics`: passes, time asleep and awake, the longest pass and the callouts by kind, from any thread.
@Suite struct LoopMetricsTests {
    typealias Handled = Loop.HandledCounts

    @Test func theCountsAreWhatTheLoopDid() {
        let pipe = Pipe()
        defer { pipe.close() }
        let seen = Recorder<Loop.Metrics>()
        let (loop, thread) = startLoopThread { loop in
            let keepAlive = ItemsSupport.keepAlive()
            let source = LoopSource { _ in }
            let reader = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                var byte: UInt8 = 0
                _ = read(pipe.readEnd, &byte, 1)
            }
            let observer = LoopObserver(activities: .beforeTimers) { _, _ in }
            try! loop.add(keepAlive)
            try! loop.add(source)
            try! loop.add(reader)
            try! loop.add(observer)
            seen.append(loop.metrics)

            // Five passes, each performing the source once.
            for _ in 0..<5 {
                source.signal()
                loop.run(in: .default, for: .zero)
            }
            // One pass: three timers and four callbacks due, six blocks queued, one byte to read.
            for _ in 0..<3 { try! loop.add(try! LoopTimer(after: .zero) { _ in }) }
            for _ in 0..<4 { try! loop.schedule(after: .zero) {} }
            for _ in 0..<6 { loop.perform {} }
            var byte: UInt8 = 1
            _ = write(pipe.writeEnd, &byte, 1)
            loop.run(in: .default, for: .zero)
            seen.append(loop.metrics)

            for invalidate in [keepAlive.invalidate, source.invalidate, reader.invalidate, observer.invalidate] {
                invalidate()
            }
        }
        thread.join()
        let snapshots = seen.all
        try? #require(snapshots.count == 2)
        let (before, after) = (snapshots[0], snapshots[1])
        #expect(after.passes - before.passes == 6)
        #expect(
            after.handled - before.handled
                == Handled(
                    sourcesPerformed: 5, descriptorReports: 1, timersFired: 3, callbacksRun: 4, observerCalls: 6,
                    blocksRun: 6))
        // Read from another thread once the loop's thread has exited: the same figures, frozen.
        let final = loop.metrics
        #expect(final.passes == after.passes)
        #expect(final.handled == after.handled)
        #expect(final.timeAsleep == after.timeAsleep && final.timeAwake == after.timeAwake)
        #expect(final.longestPass == after.longestPass)
    }

    @Test func timeAsleepGrowsWhileTheLoopIdles() throws {
        let worker = try LoopThread(name: "lm-idle")
        defer { worker.stop() }
        try worker.performAndWait {}  // Running, and about to sleep.
        let loop = worker.loop
        let start = loop.metrics
        // The loop sleeps through all of it: only the sleep in progress, counted up to each reading, makes it grow.
        #expect(waitUntil { loop.metrics.timeAsleep - start.timeAsleep >= .milliseconds(200) })
        let end = loop.metrics
        #expect(end.utilization(since: start) < 0.25)
        #expect(end.timeAwake - start.timeAwake < .milliseconds(100))
        #expect(end.takenAt - start.takenAt >= .milliseconds(200))
    }

    @Test func timeAwakeGrowsWhileAHandlerBusyWaitsAndTheLongestPassCoversIt() throws {
        let worker = try LoopThread(name: "lm-busy")
        defer { worker.stop() }
        try worker.performAndWait {}
        let loop = worker.loop
        let before = loop.metrics
        let started = ItemsSupport.Flag()
        let release = ItemsSupport.Flag()
        let finished = ItemsSupport.Flag()
        worker.perform {
            started.set()
            busyWait(atLeast: .milliseconds(50)) { release.isSet }
            finished.set()
        }
        #expect(waitUntil { started.isSet })
        let early = loop.metrics
        // The pass is still going: only the awake stretch in progress, counted up to each reading, makes it grow.
        #expect(waitUntil { loop.metrics.timeAwake - early.timeAwake >= .milliseconds(30) })
        let late = loop.metrics
        release.set()
        #expect(late.passes == early.passes)
        #expect(late.utilization(since: early) > 0.95)
        #expect(late.timeAsleep == early.timeAsleep)

        #expect(waitUntil { finished.isSet })
        // The busy pass counts when it ends: the pass went on to sleep after the block, and ends once woken.
        try worker.performAndWait {}
        #expect(waitUntil { loop.metrics.longestPass >= .milliseconds(50) })
        let after = loop.metrics
        #expect(after.timeAwake - before.timeAwake >= .milliseconds(50))
        #expect(after.handled.blocksRun - before.handled.blocksRun >= 1)
    }

    @Test func anotherThreadSeesFiguresThatOnlyGrowWhileTheLoopRuns() throws {
        let worker = try LoopThread(name: "lm-reader")
        defer { worker.stop() }
        let loop = worker.loop
        let rounds = 20_000
        // A source that signals itself again until `rounds` performs, so passes follow each other, and a timer every
        // millisecond that the loop sleeps for after every 100 of them: awake and asleep by turns.
        let performed = Counter()
        let busy = LoopSource { source in
            let done = performed.increment()
            if done < rounds && done % 100 != 0 { source.signal() }
        }
        let ticker = try LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { _ in busy.signal() }
        try loop.add(busy)
        try loop.add(ticker)
        defer {
            busy.invalidate()
            ticker.invalidate()
        }
        busy.signal()

        var previous = loop.metrics
        var reads = 0
        var problems: [String] = []
        let deadline = Loop.Instant.now + .seconds(60)
        while performed.current < rounds && Loop.Instant.now < deadline {
            let current = loop.metrics
            reads += 1
            if current.passes < previous.passes { problems.append("passes went back: \(previous) → \(current)") }
            if current.timeAsleep < previous.timeAsleep || current.timeAwake < previous.timeAwake {
                problems.append("time went back: \(previous) → \(current)")
            }
            if current.handled.sourcesPerformed < previous.handled.sourcesPerformed
                || current.handled.timersFired < previous.handled.timersFired
            {
                problems.append("counts went back: \(previous) → \(current)")
            }
            let counted = (current.timeAsleep + current.timeAwake) - (previous.timeAsleep + previous.timeAwake)
            if counted > current.takenAt - previous.takenAt {
                problems.append("more time counted than passed: \(previous) → \(current)")
            }
            if current.longestPass < previous.longestPass { problems.append("longest pass shrank") }
            previous = current
            if problems.count > 5 { break }
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(performed.current >= rounds)
        #expect(reads > 10)
        let final = try worker.performAndWait { loop.metrics }
        #expect(final.handled.sourcesPerformed >= rounds)
        #expect(final.passes >= rounds)
        #expect(final.timeAsleep > .zero && final.timeAwake > .zero)
    }

    @Test func utilizationIsTheShareOfAWindowSpentAwake() {
        let start = Loop.Metrics(timeAsleep: .seconds(10), timeAwake: .seconds(5))
        let quarter = Loop.Metrics(timeAsleep: .seconds(13), timeAwake: .seconds(6))
        #expect(quarter.utilization(since: start) == 0.25)
        #expect(quarter.utilization == 6.0 / 19.0)
        #expect(start.utilization(since: start) == 0)  // No time in between.
        #expect(Loop.Metrics().utilization == 0)  // Never ran.
        let busy = Loop.Metrics(timeAsleep: .seconds(10), timeAwake: .seconds(9))
        #expect(busy.utilization(since: start) == 1)
    }

    @Test func theHandledCountsSubtractAndDescribeThemselves() {
        let later = Handled(sourcesPerformed: 3, descriptorReports: 1, timersFired: 2, blocksRun: 5, jobsRun: 1)
        let earlier = Handled(sourcesPerformed: 1, timersFired: 2, blocksRun: 1)
        #expect(later - earlier == Handled(sourcesPerformed: 2, descriptorReports: 1, blocksRun: 4, jobsRun: 1))
        #expect(later.total == 12)
        #expect(
            (later - earlier).description
                == "2 sources performed, 1 descriptor report, 0 timers fired, 0 callbacks run, 0 observer calls, "
                + "4 blocks run, 1 job run, 0 main-queue drains")
    }

    @Test func actorJobsCountAsJobsNotBlocks() async throws {
        let worker = try LoopThread(name: "lm-jobs")
        defer { worker.stop() }
        let actor = LoopBoundRecorder(loop: worker.loop)
        _ = await actor.increment()  // The actor's first hop is behind us.
        let before = worker.loop.metrics
        for _ in 0..<5 { _ = await actor.increment() }
        let after = worker.loop.metrics  // Counted as each job runs: the await saw it run.
        #expect((after.handled - before.handled).jobsRun >= 5)
        #expect((after.handled - before.handled).blocksRun == 0)
    }

    @Test func aHostedLoopIsAwakeInItsPassesAndNeverAsleep() {
        let seen = Recorder<Loop.Metrics>()
        let (_, thread) = startLoopThread { loop in
            let keepAlive = ItemsSupport.keepAlive()
            let source = LoopSource { _ in }
            try! loop.add(keepAlive)
            try! loop.add(source)
            seen.append(loop.metrics)
            for _ in 0..<10 {
                source.signal()
                _ = loop.runPass()
                busyWait(atLeast: .milliseconds(10))  // The host's own work: neither asleep nor awake.
            }
            seen.append(loop.metrics)
            keepAlive.invalidate()
            source.invalidate()
        }
        thread.join()
        let snapshots = seen.all
        try? #require(snapshots.count == 2)
        let (before, after) = (snapshots[0], snapshots[1])
        #expect(after.passes - before.passes == 10)
        #expect((after.handled - before.handled).sourcesPerformed == 10)
        #expect(after.timeAsleep == before.timeAsleep)
        #expect(after.timeAwake > before.timeAwake)
        #expect(after.timeAwake - before.timeAwake < .milliseconds(50))  // Not the 100 ms of the host's work.
    }

    @Test func timeBetweenRunsCountsAsNeitherAsleepNorAwake() {
        let seen = Recorder<Loop.Metrics>()
        let (_, thread) = startLoopThread { loop in
            let keepAlive = ItemsSupport.keepAlive()
            try! loop.add(keepAlive)
            loop.run(in: .default, for: .milliseconds(30))  // Asleep until the deadline.
            seen.append(loop.metrics)
            busyWait(atLeast: .milliseconds(60))  // Busy, but outside any run.
            seen.append(loop.metrics)
            keepAlive.invalidate()
        }
        thread.join()
        let snapshots = seen.all
        try? #require(snapshots.count == 2)
        let (afterRun, afterGap) = (snapshots[0], snapshots[1])
        #expect(afterRun.timeAsleep >= .milliseconds(20))
        #expect(afterRun.timeAsleep + afterRun.timeAwake <= .milliseconds(30) + ItemsSupport.slack)
        #expect(afterGap.timeAsleep == afterRun.timeAsleep)
        #expect(afterGap.timeAwake == afterRun.timeAwake)
    }
}
