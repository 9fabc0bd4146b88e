import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// The allocation-free one-shot callbacks (`Loop.schedule(at:tolerance:in:with:_:file:line:)`, a C function and a word) and
/// `reserveCallbackCapacity(_:)`: the same semantics as the closure form (ScheduledCallbackTests) for firing, order
/// with closures and timers, cancelling, other threads, modes and a terminated loop.
@Suite struct ScheduledFunctionCallTests {
    @Test func firesOnceOnTimeWithItsArgument() {
        let calls = Recorder<String>()
        let times = Recorder<Loop.Instant>()
        let target = CallTarget("seven", calls, times: times)
        let outcome = Box<String>()
        let due = Box<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let fireTime = Loop.Instant.now + .milliseconds(40)
            due.value = fireTime
            let callback = try! loop.schedule(at: fireTime, with: target.argument, CallTarget.call)
            let result = loop.run(in: .default, for: .seconds(5))
            loop.cancel(callback)  // Already ran: nothing.
            outcome.value = "\(result)"
        }
        #expect(calls.all == ["seven"])
        #expect(outcome.value == "finished")  // It kept the run going, then the mode was empty.
        guard let actual = times.all.first, let due = due.value else { return }
        #expect(actual >= due)
        #expect(actual - due <= ItemsSupport.slack)
        withExtendedLifetime(target) {}
    }

    @Test func firesInOrderOfTimeThenSchedulingWithClosuresAndTimers() {
        let order = Recorder<String>()
        let f0 = CallTarget("f0", order)
        let f1 = CallTarget("f1", order)
        let f2 = CallTarget("f2", order)
        ItemsSupport.onLoopThread { loop in
            let base = Loop.Instant.now + .milliseconds(30)
            try! loop.schedule(at: base + .milliseconds(2), with: f2.argument, CallTarget.call)
            try! loop.add(try! LoopTimer(at: base) { _ in order.append("t0") })
            try! loop.schedule(at: base, with: f0.argument, CallTarget.call)
            try! loop.schedule(at: base) { order.append("c0") }
            try! loop.add(try! LoopTimer(at: base + .milliseconds(1)) { _ in order.append("t1") })
            try! loop.schedule(at: base + .milliseconds(1), with: f1.argument, CallTarget.call)
            try! loop.schedule(at: base + .milliseconds(2)) { order.append("c2") }
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(order.all == ["t0", "f0", "c0", "t1", "f1", "f2", "c2"])
        withExtendedLifetime((f0, f1, f2)) {}
    }

    @Test func cancelledCallsNeverHappenAndStaleValuesDoNothing() {
        let calls = Recorder<String>()
        let cancelled = CallTarget("cancelled", calls)
        let reuser = CallTarget("reuser", calls)
        let victim = CallTarget("victim", calls)
        ItemsSupport.onLoopThread { loop in
            let soon = Loop.Instant.now + .milliseconds(20)
            let first = try! loop.schedule(at: soon, with: cancelled.argument, CallTarget.call)
            loop.cancel(first)
            // The slot is reused by the next callback: the old value must not reach it.
            try! loop.schedule(at: soon, with: reuser.argument, CallTarget.call)
            loop.cancel(first)
            // A call cancelled by a closure of the same pass does not happen.
            let doomed = Box<Loop.ScheduledCallback>()
            try! loop.schedule(at: soon) { if let doomed = doomed.value { loop.cancel(doomed) } }
            doomed.value = try! loop.schedule(at: soon, with: victim.argument, CallTarget.call)
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(calls.all == ["reuser"])
        withExtendedLifetime((cancelled, reuser, victim)) {}
    }

    @Test func fromAnotherThreadItWakesTheLoopAndCanBeCancelled() {
        let calls = Recorder<String>()
        let remote = CallTarget("remote", calls)
        let cancelled = CallTarget("cancelled", calls)
        let running = ItemsSupport.startRunningLoop()
        let scheduledAt = Loop.Instant.now
        try! running.loop.schedule(after: .milliseconds(20), with: remote.argument, CallTarget.call)
        let callback = try! running.loop.schedule(after: .milliseconds(20), with: cancelled.argument, CallTarget.call)
        running.loop.cancel(callback)
        #expect(waitUntil { calls.count == 1 })
        #expect(Loop.Instant.now - scheduledAt < ItemsSupport.slack + .milliseconds(20))
        running.finish()
        #expect(calls.all == ["remote"])
        withExtendedLifetime((remote, cancelled)) {}
    }

    @Test func inANamedModeItWaitsForThatMode() {
        let calls = Recorder<String>()
        let custom = CallTarget("custom", calls)
        let common = CallTarget("common", calls)
        ItemsSupport.onLoopThread { loop in
            let mode = Loop.Mode("function-calls")
            try! loop.schedule(at: .now, in: mode, with: custom.argument, CallTarget.call)
            try! loop.schedule(at: .now, in: .common, with: common.argument, CallTarget.call)
            try! loop.add(ItemsSupport.keepAlive(), to: mode)
            // The default mode is common: the common call happens, the custom one waits.
            ItemsSupport.run(loop) { calls.count == 1 }
            loop.run(in: .default, for: .milliseconds(30))
            #expect(calls.all == ["common"])
            loop.run(in: mode, for: .milliseconds(200), returnAfterSourceHandled: false)
            #expect(calls.all == ["common", "custom"])
        }
        withExtendedLifetime((custom, common)) {}
    }

    @Test func aTerminatedLoopRefusesWithATypedError() {
        let calls = Recorder<String>()
        let never = CallTarget("never", calls)
        let loopBox = Box<Loop>()
        ItemsSupport.onLoopThread { loop in
            loopBox.value = loop
            try! loop.schedule(after: .seconds(3600), with: never.argument, CallTarget.call)
        }
        let loop = loopBox.value!
        #expect(loop.isTerminated)
        #expect { try loop.schedule(after: .zero, with: never.argument, CallTarget.call) } throws: {
            ($0 as? LoopError)?.code == .loopTerminated
        }
        #expect { try loop.reserveCallbackCapacity(10) } throws: { ($0 as? LoopError)?.code == .loopTerminated }
        #expect(calls.all.isEmpty)
        withExtendedLifetime(never) {}
    }

    @Test func badToleranceThrowsAsForClosures() {
        ItemsSupport.onLoopThread { loop in
            #expect { try loop.schedule(after: .zero, tolerance: .seconds(-1), with: 0, CallTarget.ignore) } throws: {
                ($0 as? LoopError)?.code == .invalidTolerance
            }
        }
    }

    @Test func aToleranceIsZeroOnlyWhenBothOfItsWordsAre() {
        #expect(Duration.zero.isZero)
        #expect(Duration.seconds(0).isZero)
        #expect(!Duration.nanoseconds(1).isZero)
        #expect(!Duration(secondsComponent: 0, attosecondsComponent: 1).isZero)
        #expect(!Duration.seconds(-1).isZero)
        #expect(!LoopTimer.maximumInterval.isZero)
    }

    @Test func aReservedTableTakesThatManyWithoutGrowingAndStillGrowsPastIt() {
        let calls = Recorder<String>()
        let target = CallTarget("call", calls)
        let capacities = Recorder<Int>()
        ItemsSupport.onLoopThread { loop in
            try! loop.reserveCallbackCapacity(1_000)
            capacities.append(loop.timerTable.reservedCapacity)
            let base = Loop.Instant.now + .milliseconds(10)
            for index in 0..<1_000 {
                try! loop.schedule(at: base + .microseconds(index), with: target.argument, CallTarget.call)
            }
            capacities.append(loop.timerTable.reservedCapacity)
            for index in 0..<500 { try! loop.schedule(at: base + .microseconds(index)) { calls.append("closure") } }
            loop.timerTable.checkInvariants()
            ItemsSupport.run(loop) { calls.count == 1_500 }
            try! loop.reserveCallbackCapacity(0)  // Within the size: nothing.
            #expect { try loop.reserveCallbackCapacity(-1) } throws: { ($0 as? LoopError)?.code == .invalidArgument }
        }
        #expect(capacities.all == [1_000, 1_000])
        #expect(calls.count == 1_500)
        withExtendedLifetime(target) {}
    }

    @Test func reservingFromAnotherThreadReachesTheLoop() {
        let running = ItemsSupport.startRunningLoop()
        try! running.loop.reserveCallbackCapacity(300)
        let capacity = Recorder<Int>()
        running.loop.perform { capacity.append(Loop.current.timerTable.reservedCapacity) }
        #expect(waitUntil { capacity.count == 1 })
        running.finish()
        #expect(capacity.all.first.map { $0 >= 300 } == true)
    }
}

/// A C function's argument in these tests: the bits of an unretained reference to one of these (as the docs
/// suggest), which records its name (and when it was called) in the test's recorders. The test keeps it alive
/// until the loop is done with it.
private final class CallTarget: Sendable {
    let name: String
    let calls: Recorder<String>
    let times: Recorder<Loop.Instant>?

    init(_ name: String, _ calls: Recorder<String>, times: Recorder<Loop.Instant>? = nil) {
        self.name = name
        self.calls = calls
        self.times = times
    }

    var argument: Int { Int(bitPattern: Unmanaged.passUnretained(self).toOpaque()) }

    /// Records the call of the target `argument` names.
    static let call: @convention(c) (Int) -> Void = { argument in
        let target = Unmanaged<CallTarget>.fromOpaque(UnsafeRawPointer(bitPattern: argument)!).takeUnretainedValue()
        target.times?.append(.now)
        target.calls.append(target.name)
    }

    /// Does nothing.
    static let ignore: @convention(c) (Int) -> Void = { _ in }
}
