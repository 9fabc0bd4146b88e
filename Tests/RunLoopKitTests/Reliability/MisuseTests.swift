import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// The misuse table of Docs/Reliability.md, the cases that throw or are harmless (traps: MisuseTrapTests).
@Suite struct MisuseTests {
    private func code(_ body: () throws(LoopError) -> Void) -> LoopError.Code? {
        do throws(LoopError) {
            try body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func addingAnInvalidatedItemThrows() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in }
            let timer = ItemsSupport.keepAlive()
            let observer = LoopObserver(activities: .all) { _, _ in }
            let descriptorSource = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            source.invalidate()
            timer.invalidate()
            observer.invalidate()
            descriptorSource.invalidate()
            #expect(code { () throws(LoopError) in try loop.add(source) } == .invalidated)
            #expect(code { () throws(LoopError) in try loop.add(timer, to: .common) } == .invalidated)
            #expect(code { () throws(LoopError) in try loop.add(observer, to: "other") } == .invalidated)
            #expect(code { () throws(LoopError) in try loop.add(descriptorSource) } == .invalidated)
        }
    }

    @Test func addingAnItemToASecondLoopThrows() {
        let pipe = Pipe()
        defer { pipe.close() }
        let source = LoopSource { _ in }
        let timer = ItemsSupport.keepAlive()
        let observer = LoopObserver(activities: .all) { _, _ in }
        let descriptorSource = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
        let first = ItemsSupport.startRunningLoop()
        let second = ItemsSupport.startRunningLoop()
        defer {
            descriptorSource.invalidate()
            first.finish()
            second.finish()
        }
        try! first.loop.add(source)
        try! first.loop.add(timer)
        try! first.loop.add(observer)
        try! first.loop.add(descriptorSource)
        #expect(code { () throws(LoopError) in try second.loop.add(source) } == .ownedByAnotherLoop)
        #expect(code { () throws(LoopError) in try second.loop.add(timer) } == .ownedByAnotherLoop)
        #expect(code { () throws(LoopError) in try second.loop.add(observer) } == .ownedByAnotherLoop)
        #expect(code { () throws(LoopError) in try second.loop.add(descriptorSource) } == .ownedByAnotherLoop)
        // The first loop still owns them: adding there again is fine.
        #expect(code { () throws(LoopError) in try first.loop.add(source, to: "other") } == nil)
    }

    @Test func badIntervalsAndTolerancesThrow() {
        func make(_ interval: Duration?, _ tolerance: Duration = .zero) -> LoopError.Code? {
            code { () throws(LoopError) in
                _ = try LoopTimer(after: .seconds(1), repeating: interval, tolerance: tolerance) { _ in }
            }
        }
        #expect(make(.zero) == .invalidInterval)
        #expect(make(.nanoseconds(-1)) == .invalidInterval)
        #expect(make(.seconds(Int64.max)) == .invalidInterval)
        #expect(make(LoopTimer.maximumInterval + .nanoseconds(1)) == .invalidInterval)
        #expect(make(.seconds(1), .nanoseconds(-1)) == .invalidTolerance)
        #expect(make(.seconds(1), .seconds(Int64.max)) == .invalidTolerance)
        #expect(make(nil, .seconds(-5)) == .invalidTolerance)
        #expect(make(LoopTimer.maximumInterval, LoopTimer.maximumInterval) == nil)
        #expect(make(nil) == nil)
        // A delay that overflows the clock saturates: the timer is simply never due.
        let far = try? LoopTimer(after: .seconds(Int64.max)) { _ in }
        #expect(far?.nextFireTime == .distantFuture)
    }

    @Test func aTimerDueInThePastFiresInTheFirstPass() {
        let events = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            CoreRunSupport.recordActivities(of: loop, into: events, activities: [.entry, .beforeWaiting])
            try! loop.add(try! LoopTimer(at: Loop.Instant(nanoseconds: 1)) { _ in events.append("timer") })
            let start = Loop.Instant.now
            let result = loop.run(in: .default, for: .seconds(10))
            events.append("\(result)")
            #expect(Loop.Instant.now - start < CoreRunSupport.slack)
        }
        // The first pass announces beforeWaiting, finds the timer due instead of sleeping and fires it; the mode
        // then has nothing left, so the run finishes.
        #expect(events.all == ["entry", "beforeWaiting", "timer", "finished"])
    }

    @Test func invalidClosedAndUnpollableDescriptorsThrow() throws {
        let closed = ItemsSupport.closedDescriptorNumber(slot: 7)
        for descriptor in [-1, closed] {
            let error = code { () throws(LoopError) in _ = try FileDescriptorSource(descriptor: descriptor) { _, _ in }
            }
            #expect(error == .badDescriptor)
        }
        let pipe = Pipe()
        defer { pipe.close() }
        let file = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)
        defer { Glibc.close(file) }
        ItemsSupport.onLoopThread { loop in
            let first = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            let second = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            try! loop.add(first)
            #expect(code { () throws(LoopError) in try loop.add(second) } == nil)  // It shares the registration.
            second.invalidate()
            let regular = try! FileDescriptorSource(descriptor: file) { _, _ in }
            #expect(code { () throws(LoopError) in try loop.add(regular) } == .descriptorNotPollable)
            first.invalidate()
            // Once the first is gone the descriptor is free again.
            let third = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            #expect(code { () throws(LoopError) in try loop.add(third) } == nil)
            third.invalidate()
        }
    }

    /// A descriptor closed while registered and its number reused: the old source never sees the new file's
    /// events, with or without a new source on the number.
    @Test func aClosedAndReusedDescriptorNumberNeverReachesTheOldSource() {
        let old = Pipe()
        let number = fcntl(old.readEnd, F_DUPFD_CLOEXEC, ItemsSupport.highDescriptorFloor(slot: 8))
        let oldCalls = Counter()
        let newCalls = Counter()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let oldSource = try! FileDescriptorSource(descriptor: number) { _, events in
                if events != .invalid { oldCalls.increment() }  // Told once that the descriptor is gone: fine.
            }
            try! loop.add(oldSource)
            loop.run(in: .default, for: .zero)
            // Close without invalidating, then put another pipe's read end on the same number.
            Glibc.close(number)
            old.close()
            let reuse = Pipe()
            #expect(dup2(reuse.readEnd, number) == number)
            _ = fcntl(number, F_SETFD, FD_CLOEXEC)
            reuse.write()
            loop.run(in: .default, for: .milliseconds(50))
            #expect(oldCalls.current == 0)
            // A new source on the number sees the events; the old one still does not.
            let newSource = try! FileDescriptorSource(descriptor: number) { _, _ in
                newCalls.increment()
                reuse.drain()
                var byte: UInt8 = 0
                _ = read(number, &byte, 1)
            }
            try! loop.add(newSource)
            ItemsSupport.run(loop) { newCalls.current >= 1 }
            #expect(oldCalls.current == 0)
            #expect(!oldSource.isValid || oldCalls.current == 0)
            newSource.invalidate()
            oldSource.invalidate()
            Glibc.close(number)
            reuse.close()
        }
        #expect(newCalls.current >= 1)
    }

    @Test func stopOnALoopThatIsNotRunningIsForgotten() {
        let results = Recorder<Loop.RunResult>()
        let running = ItemsSupport.startRunningLoop()
        running.finish()
        ItemsSupport.onLoopThread { loop in
            loop.stop()
            loop.stop()
            loop.wakeUp()
            try! loop.add(try! LoopTimer(after: .milliseconds(30)) { _ in })
            let start = Loop.Instant.now
            results.append(loop.run(in: .default, for: .seconds(10)))
            // Not stopped at once: it slept until the timer fired and the mode was empty.
            #expect(Loop.Instant.now - start >= .milliseconds(25))
        }
        #expect(results.all == [.finished])
    }
}
