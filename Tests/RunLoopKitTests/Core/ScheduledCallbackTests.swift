import Glibc
import SplitMix64
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// One-shot callbacks (`Loop.schedule(at:)` / `cancel(_:)`): firing, order with timers, cancellation from either
/// side, stale values, modes, keep-alive, other threads, teardown, and the table against a reference at scale.
@Suite struct ScheduledCallbackTests {
    @Test func firesOnceNeverEarlyAndTheRunFinishesAfterIt() {
        let fired = Recorder<Loop.Instant>()
        let outcome = Box<String>()
        let due = Box<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let fireTime = Loop.Instant.now + .milliseconds(40)
            due.value = fireTime
            let callback = try! loop.schedule(at: fireTime) { fired.append(.now) }
            let result = loop.run(in: .default, for: .seconds(5))
            loop.cancel(callback)  // Already ran: nothing.
            outcome.value = "\(result)"
        }
        #expect(fired.count == 1)
        #expect(outcome.value == "finished")  // It kept the run going, then the mode was empty.
        guard let actual = fired.all.first, let due = due.value else { return }
        #expect(actual >= due)
        #expect(actual - due <= ItemsSupport.slack)
    }

    @Test func firesInOrderOfTimeThenSchedulingTogetherWithTimers() {
        let order = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let base = Loop.Instant.now + .milliseconds(30)
            try! loop.schedule(at: base + .milliseconds(2)) { order.append("c2") }
            try! loop.add(try! LoopTimer(at: base) { _ in order.append("t0") })
            try! loop.schedule(at: base) { order.append("c0") }
            try! loop.add(try! LoopTimer(at: base + .milliseconds(1)) { _ in order.append("t1") })
            try! loop.schedule(at: base) { order.append("c0b") }
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(order.all == ["t0", "c0", "c0b", "t1", "c2"])
    }

    @Test func cancelledCallbacksNeverRunAndStaleValuesDoNothing() {
        let ran = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let soon = Loop.Instant.now + .milliseconds(20)
            let cancelled = try! loop.schedule(at: soon) { ran.append("cancelled") }
            loop.cancel(cancelled)
            // The slot is reused by the next callback: the old value must not reach it.
            let reuser = try! loop.schedule(at: soon) { ran.append("reuser") }
            loop.cancel(cancelled)  // Must not cancel the reuser, which runs below.
            // A callback cancelled by an earlier one of the same pass does not run.
            let victim = Box<Loop.ScheduledCallback>()
            try! loop.schedule(at: soon) {
                ran.append("canceller")
                if let victim = victim.value { loop.cancel(victim) }
            }
            victim.value = try! loop.schedule(at: soon) { ran.append("victim") }
            loop.run(in: .default, for: .seconds(5))
            loop.cancel(reuser)  // Already ran: nothing.
        }
        #expect(ran.all == ["reuser", "canceller"])
    }

    @Test func aCallbackCancellingItselfOrSchedulingMoreIsFine() {
        let ran = Recorder<Int>()
        ItemsSupport.onLoopThread { loop in
            let me = Box<Loop.ScheduledCallback>()
            me.value = try! loop.schedule(after: .milliseconds(5)) {
                loop.cancel(me.value!)  // Already running: nothing.
                ran.append(1)
                try! loop.schedule(after: .zero) { ran.append(2) }  // Runs at the next pass, not this one.
            }
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(ran.all == [1, 2])
    }

    @Test func aValueOfAnotherLoopIsIgnored() {
        let ran = Counter()
        let other = Box<Loop.ScheduledCallback>()
        ItemsSupport.onLoopThread { loop in
            other.value = try! loop.schedule(after: .seconds(3600)) {}
        }
        ItemsSupport.onLoopThread { loop in
            let mine = try! loop.schedule(after: .milliseconds(10)) { ran.increment() }
            #expect(mine.slot == other.value!.slot)  // Same slot and generation, different loop.
            loop.cancel(other.value!)  // Must not cancel `mine`, which runs below.
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(ran.current == 1)
    }

    @Test func dueInAModeNotRunningItWaitsForThatMode() {
        let order = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let custom = Loop.Mode("custom")
            try! loop.schedule(at: .now, in: custom) { order.append("custom") }
            try! loop.schedule(at: .now, in: .common) { order.append("common") }
            try! loop.add(ItemsSupport.keepAlive(), to: custom)
            // The default mode is common: the common callback runs, the custom one waits.
            ItemsSupport.run(loop) { order.count == 1 }
            #expect(order.all == ["common"])
            loop.run(in: custom, for: .milliseconds(200), returnAfterSourceHandled: false)
            #expect(order.all == ["common", "custom"])
        }
    }

    @Test func commonCallbacksKeepCommonModesRunning() {
        let outcome = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let callback = try! loop.schedule(after: .seconds(3600), in: .common) {}
            outcome.append("\(loop.run(in: .default, for: .milliseconds(30)))")
            loop.cancel(callback)
            outcome.append("\(loop.run(in: .default, for: .seconds(5)))")
        }
        #expect(outcome.all == ["timedOut", "finished"])
    }

    @Test func fromAnotherThreadItWakesTheLoopAndCanBeCancelled() {
        let ran = Recorder<String>()
        let running = ItemsSupport.startRunningLoop()
        let scheduledAt = Loop.Instant.now
        try! running.loop.schedule(after: .milliseconds(20)) { ran.append("remote") }
        let cancelled = try! running.loop.schedule(after: .milliseconds(20)) { ran.append("cancelled") }
        running.loop.cancel(cancelled)
        #expect(waitUntil { ran.count == 1 })
        #expect(Loop.Instant.now - scheduledAt < ItemsSupport.slack + .milliseconds(20))
        // Cancelled from another thread after it ran, or from another thread before it applied: both do nothing.
        running.loop.cancel(cancelled)
        running.finish()
        #expect(ran.all == ["remote"])
    }

    @Test func afterTheThreadExitsSchedulingThrowsAndClosuresAreReleased() {
        final class Canary: Sendable {
            let released: Counter
            init(_ released: Counter) { self.released = released }
            deinit { released.increment() }
        }
        let released = Counter()
        let loopBox = Box<Loop>()
        ItemsSupport.onLoopThread { loop in
            loopBox.value = loop
            let canary = Canary(released)
            for _ in 0..<3 { try! loop.schedule(after: .seconds(3600)) { _ = canary } }
        }
        #expect(released.current == 1)  // The loop's teardown dropped all three closures.
        #expect(throws: LoopError.self) { try loopBox.value!.schedule(after: .zero) {} }
    }

    @Test func badToleranceThrows() {
        ItemsSupport.onLoopThread { loop in
            #expect(throws: LoopError.self) { try loop.schedule(after: .zero, tolerance: .seconds(-1)) {} }
            #expect(throws: LoopError.self) {
                try loop.schedule(after: .zero, tolerance: LoopTimer.maximumInterval + .seconds(1)) {}
            }
        }
    }

    @Test func toleranceLetsItFireLateButNeverEarly() {
        let fired = Box<Loop.Instant>()
        let due = Box<Loop.Instant>()
        ItemsSupport.onLoopThread { loop in
            let fireTime = Loop.Instant.now + .milliseconds(20)
            due.value = fireTime
            try! loop.schedule(at: fireTime, tolerance: .milliseconds(30)) { fired.value = .now }
            loop.run(in: .default, for: .seconds(5))
        }
        #expect(fired.value! >= due.value!)
    }

    @Test(arguments: [7 as UInt64, 99])
    func theTableMatchesAReferenceAtScale(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var table = TimerTable()
        var live: [(slot: Int32, generation: UInt32, key: (Int64, UInt64))] = []
        var sequence: UInt64 = 0
        for _ in 0..<20_000 {
            if Int.random(in: 0..<10, using: &random) < 6 || live.isEmpty {
                let latest = Int64.random(in: 0..<1_000, using: &random)
                let (slot, generation) = table.insertCallback(
                    fireTime: latest, latestFireTime: latest, sequence: sequence, modeID: 0, remoteID: 0,
                    callback: CallbackSlots.Stored {})
                live.append((slot, generation, (latest, sequence)))
                sequence += 1
            } else if Bool.random(using: &random) {
                let victim = live.remove(at: Int.random(in: 0..<live.count, using: &random))
                var released = CallbackSlots.Stored.nothing
                #expect(table.cancel(slot: victim.slot, generation: victim.generation, released: &released) != nil)
                #expect(released.closure != nil)
                var again = CallbackSlots.Stored.nothing
                #expect(table.cancel(slot: victim.slot, generation: victim.generation, released: &again) == nil)
                #expect(again.closure == nil)
            } else {
                let expected = live.min { $0.key < $1.key }!
                let first = table.takeFirstAsDue()
                #expect(first.slot == expected.slot)
                var callback = CallbackSlots.Stored.nothing
                #expect(table.takeForFiring(first, callback: &callback) != nil)
                #expect(callback.closure != nil)
                live.removeAll { $0.slot == expected.slot }
            }
        }
        table.checkInvariants()
        #expect(table.callbacks.count == live.count)
    }

    /// Timers and callbacks share one heap: taken first to last, they come out in (latest fire time, sequence)
    /// order whatever their kind, and a heap entry and a slot keep their documented sizes.
    @Test func timersAndCallbacksShareOneHeapOrder() {
        #expect(MemoryLayout<TimerEntry>.stride == 24)
        #expect(MemoryLayout<CallbackSlots.Slot>.stride == 40)
        var random = SplitMix64(seed: 5)
        var table = TimerTable()
        var timers: [LoopTimer] = []
        var expected: [(key: (Int64, UInt64), isTimer: Bool)] = []
        for _ in 0..<2_000 {
            let latest = Int64.random(in: 0..<100, using: &random)
            let sequence = table.takeSequence()
            if Bool.random(using: &random) {
                let timer = TimerHeapTests.timer(latest: latest, sequence: sequence)
                timers.append(timer)
                table.insert(timer)
                expected.append(((latest, sequence), true))
            } else {
                _ = table.insertCallback(
                    fireTime: latest, latestFireTime: latest, sequence: sequence, modeID: 0, remoteID: 0,
                    callback: CallbackSlots.Stored {})
                expected.append(((latest, sequence), false))
            }
        }
        table.checkInvariants()
        expected.sort { $0.key < $1.key }
        var taken: [(key: (Int64, UInt64), isTimer: Bool)] = []
        while table.firstLatestFireTime != nil {
            let entry = table.takeFirstAsDue()
            taken.append(((entry.latestFireTime, entry.sequence), entry.isTimer))
            if !entry.isTimer {
                var callback = CallbackSlots.Stored.nothing
                #expect(table.takeForFiring(entry, callback: &callback) != nil)
            }
        }
        #expect(taken.map(\.key.0) == expected.map(\.key.0))
        #expect(taken.map(\.key.1) == expected.map(\.key.1))
        #expect(taken.map(\.isTimer) == expected.map(\.isTimer))
        #expect(table.callbacks.count == 0)
        withExtendedLifetime(timers) {}
    }
}
