import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Rate limits: a source, descriptor source or timer handled more than its burst within its interval is paused until
/// the window ends, loses nothing meanwhile, and shows it (``LoopSource/isRateLimited``, the rate-limit handler).
@Suite struct RateLimitTests {
    /// How far apart a handler's timestamp and the loop's own reading of the clock for that call may be: the handler
    /// stamps after the loop read the clock, later by however long the thread was preempted in between, which on a
    /// loaded 2-CPU machine has been over 1 ms (a window measured 98.8 ms beside an hour-long soak). A window ended
    /// early by a defect would be early by far more.
    private static let clockSlack: Duration = .milliseconds(10)

    /// Handler times, in order.
    private final class Times: Sendable {
        private let recorder = Recorder<Loop.Instant>()
        func stamp() { recorder.append(.now) }
        var all: [Loop.Instant] { recorder.all }
        var count: Int { recorder.count }
    }

    /// Counts the loop's passes that went to sleep or polled (one `beforeWaiting` each, but for polls).
    private static func passCounter(_ counter: Counter) -> LoopObserver {
        LoopObserver(activities: [.afterWaiting]) { _, _ in counter.increment() }
    }

    // MARK: Counting

    @Test func aSourceIsPerformedExactlyBurstTimesWithinAWindow() {
        let performs = Counter()
        let states = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { source in
                performs.increment()
                source.signal()  // Always wants another perform.
            }
            source.rateLimit = try! RateLimit(burst: 3, per: .seconds(30))  // Set before it joins the loop.
            try! loop.add(source)
            source.signal()
            loop.run(in: .default, for: .milliseconds(200))
            states.append(source.isRateLimited)
            states.append(source.isSignalled)
            source.invalidate()
        }
        #expect(performs.current == 3)
        #expect(states.all == [true, true])
    }

    @Test func aTimerFiresExactlyBurstTimesWithinAWindow() {
        let fires = Counter()
        let limited = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .zero, repeating: .milliseconds(1)) { _ in fires.increment() }
            try! loop.add(timer)
            timer.rateLimit = try! RateLimit(burst: 4, per: .seconds(30))  // Set after it joined the loop.
            loop.run(in: .default, for: .milliseconds(200))
            limited.append(timer.isRateLimited)
            timer.invalidate()
        }
        #expect(fires.current == 4)
        #expect(limited.all == [true])
    }

    @Test func aDescriptorSourceIsCalledExactlyBurstTimesWithinAWindow() {
        let calls = Counter()
        let limited = Recorder<Bool>()
        let passes = Counter()
        let pipe = Pipe()
        pipe.write()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in calls.increment() }
            source.rateLimit = try! RateLimit(burst: 5, per: .seconds(30))
            try! loop.add(source)
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(Self.passCounter(passes))
            loop.run(in: .default, for: .milliseconds(300))
            limited.append(source.isRateLimited)
            source.invalidate()
        }
        pipe.close()
        #expect(calls.current == 5)
        #expect(limited.all == [true])
        // Out of the epoll set while paused: the loop slept out the rest of the run.
        #expect(passes.current <= 20)
    }

    // MARK: Resuming

    @Test func aSourceResumesWhenItsWindowEndsAndNeverEarly() {
        let times = Times()
        let changes = Recorder<Bool>()
        let interval: Duration = .milliseconds(100)
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { source in
                times.stamp()
                source.signal()
            }
            source.rateLimit = try! RateLimit(burst: 2, per: interval)
            source.rateLimitHandler = { _, limited in changes.append(limited) }
            try! loop.add(source)
            source.signal()
            ItemsSupport.run(loop) { times.count >= 8 }
            source.invalidate()
        }
        let all = times.all
        #expect(all.count >= 8)
        // Two performs per window: the third after a call is at least a window later.
        for index in 0..<(all.count - 2) {
            #expect(all[index + 2] - all[index] >= interval - Self.clockSlack)
        }
        // Limited and released in turn, once per window.
        let recorded = changes.all
        #expect(recorded.count >= 6)
        for (index, limited) in recorded.enumerated() { #expect(limited == (index % 2 == 0)) }
    }

    @Test func aTimersFiringsDuringAPauseCollapseIntoOne() {
        let times = Times()
        let interval: Duration = .milliseconds(150)
        ItemsSupport.onLoopThread { loop in
            let timer = try! LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in times.stamp() }
            timer.rateLimit = try! RateLimit(burst: 1, per: interval)
            try! loop.add(timer)
            ItemsSupport.run(loop) { times.count >= 4 }
            timer.invalidate()
        }
        let all = times.all
        #expect(all.count >= 4)
        // One firing per window: the 5 ms firings due meanwhile became one, not a burst after each pause.
        for index in 0..<(all.count - 1) {
            #expect(all[index + 1] - all[index] >= interval - Self.clockSlack)
        }
    }

    // MARK: Nothing lost

    @Test func signalsDuringAPauseArePerformedAfterIt() {
        let times = Times()
        let sourceBox = Box<LoopSource>()
        let interval: Duration = .milliseconds(300)
        let running = ItemsSupport.startRunningLoop { loop in
            let source = LoopSource { _ in times.stamp() }
            source.rateLimit = try! RateLimit(burst: 1, per: interval)
            try! loop.add(source)
            sourceBox.value = source
        }
        #expect(waitUntil { sourceBox.value != nil })
        let source = sourceBox.value!
        source.signal()
        #expect(waitUntil { times.count == 1 })
        source.signal()  // The window's second perform: paused instead.
        #expect(waitUntil { source.isRateLimited })
        #expect(source.isSignalled)  // Kept, not lost.
        for _ in 0..<10 { source.signal() }  // Coalesce into the kept signal.
        #expect(waitUntil { times.count == 2 })
        #expect(waitUntil { !source.isRateLimited })
        // Nothing more comes, and the perform after the pause was not early.
        #expect(!waitUntil(timeout: .milliseconds(100)) { times.count > 2 })
        running.finish()
        let all = times.all
        #expect(all.count == 2)
        if all.count == 2 { #expect(all[1] - all[0] >= interval - Self.clockSlack) }
        source.invalidate()
    }

    @Test func dataOnADescriptorIsReportedAfterThePause() {
        let bytes = Recorder<UInt8>()
        let times = Times()
        let pipe = Pipe()
        pipe.write(1)
        pipe.write(2)
        let interval: Duration = .milliseconds(200)
        ItemsSupport.onLoopThread { loop in
            // Reads one byte per call: the second byte keeps the pipe readable through the pause.
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                var byte: UInt8 = 0
                if read(pipe.readEnd, &byte, 1) == 1 { bytes.append(byte) }
                times.stamp()
            }
            source.rateLimit = try! RateLimit(burst: 1, per: interval)
            try! loop.add(source)
            ItemsSupport.run(loop) { bytes.count == 2 }
            source.invalidate()
        }
        pipe.close()
        #expect(bytes.all == [1, 2])
        let all = times.all
        if all.count == 2 { #expect(all[1] - all[0] >= interval - Self.clockSlack) }
    }

    // MARK: What the owner sees

    @Test func theOwnerSeesTheLimitedStateFromAnyThreadAndIsToldOnTheLoopThread() {
        struct Change: Equatable, Sendable {
            let limited: Bool
            let onLoopThread: Bool
            let itsOwnTimer: Bool
        }
        let changes = Recorder<Change>()
        let timerBox = Box<LoopTimer>()
        let fires = Counter()
        let running = ItemsSupport.startRunningLoop { loop in
            let timer = try! LoopTimer(after: .zero, repeating: .milliseconds(2)) { _ in fires.increment() }
            timer.rateLimit = try! RateLimit(burst: 2, per: .milliseconds(400))
            timer.rateLimitHandler = { limitedTimer, limited in
                changes.append(
                    Change(
                        limited: limited, onLoopThread: Loop.current === loop,
                        itsOwnTimer: limitedTimer === timerBox.value))
            }
            timerBox.value = timer
            try! loop.add(timer)
        }
        #expect(waitUntil { timerBox.value?.isRateLimited == true })
        let timer = timerBox.value!
        #expect(timer.rateLimit == (try! RateLimit(burst: 2, per: .milliseconds(400))))
        #expect(timer.rateLimitHandler != nil)
        #expect(waitUntil { changes.count >= 2 })
        timer.invalidate()
        running.finish()
        let recorded = changes.all
        #expect(recorded.count >= 2)
        #expect(
            Array(recorded.prefix(2)) == [
                Change(limited: true, onLoopThread: true, itsOwnTimer: true),
                Change(limited: false, onLoopThread: true, itsOwnTimer: true),
            ])
    }

    // MARK: Validation

    @Test func invalidLimitsAreRejectedWithTypedErrors() {
        func code(_ burst: Int, _ interval: Duration) -> LoopError.Code? {
            do {
                _ = try RateLimit(burst: burst, per: interval)
                return nil
            } catch {
                return error.code
            }
        }
        for burst in [0, -1, Int.min] { #expect(code(burst, .seconds(1)) == .invalidArgument) }
        for interval: Duration in [.zero, .nanoseconds(-1), .seconds(-5), LoopTimer.maximumInterval + .seconds(1)] {
            #expect(code(1, interval) == .invalidInterval)
        }
        #expect(code(0, .zero) == .invalidArgument)  // The burst is checked first.
        #expect(code(1, LoopTimer.maximumInterval) == nil)
        let limit = try! RateLimit(burst: 1, per: .nanoseconds(1))
        #expect(limit.burst == 1 && limit.interval == .nanoseconds(1))
        #expect(try! RateLimit(burst: 10, per: .seconds(1)).description == "10 per 1.0 seconds")
        let source = LoopSource { _ in }
        #expect(source.rateLimit == nil && !source.isRateLimited && source.rateLimitHandler == nil)
    }

    // MARK: Changing the limit

    @Test func removingTheLimitDuringAPauseResumesAtOnce() {
        let performs = Counter()
        let fires = Counter()
        let changes = Recorder<Bool>()
        let sourceBox = Box<LoopSource>()
        let timerBox = Box<LoopTimer>()
        let running = ItemsSupport.startRunningLoop { loop in
            let source = LoopSource { _ in performs.increment() }
            source.rateLimit = try! RateLimit(burst: 1, per: .seconds(60))
            source.rateLimitHandler = { _, limited in changes.append(limited) }
            try! loop.add(source)
            let timer = try! LoopTimer(after: .zero, repeating: .milliseconds(2)) { _ in fires.increment() }
            timer.rateLimit = try! RateLimit(burst: 1, per: .seconds(60))
            try! loop.add(timer)
            sourceBox.value = source
            timerBox.value = timer
        }
        #expect(waitUntil { sourceBox.value != nil && timerBox.value?.isRateLimited == true })
        let source = sourceBox.value!
        let timer = timerBox.value!
        source.signal()
        #expect(waitUntil { performs.current == 1 })
        source.signal()
        #expect(waitUntil { source.isRateLimited })
        #expect(fires.current == 1)

        source.rateLimit = nil  // From another thread, a minute before the window ends.
        timer.rateLimit = nil
        // At once: within seconds (a loaded machine's scheduling), where the pause had a minute to go.
        #expect(waitUntil(timeout: .seconds(3)) { performs.current == 2 })
        #expect(waitUntil(timeout: .seconds(3)) { fires.current >= 5 })
        #expect(!source.isRateLimited && !timer.isRateLimited)
        #expect(changes.all == [true, false])
        // No limit any more: every signal is performed.
        for expected in 3...6 {
            source.signal()
            #expect(waitUntil { performs.current == expected })
        }
        source.invalidate()
        timer.invalidate()
        running.finish()
    }

    @Test func aNewLimitDuringAPauseKeepsThePauseAndCountsByTheNewLimitAfterIt() {
        let performs = Counter()
        let limitedAfterTheNewBurst = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { source in
                performs.increment()
                source.signal()
            }
            source.rateLimit = try! RateLimit(burst: 1, per: .milliseconds(100))
            try! loop.add(source)
            source.signal()
            ItemsSupport.run(loop) { source.isRateLimited }
            source.rateLimit = try! RateLimit(burst: 3, per: .seconds(60))
            ItemsSupport.run(loop) { performs.current == 4 }  // The pause ends, then three in the new window.
            loop.run(in: .default, for: .milliseconds(150))
            limitedAfterTheNewBurst.append(source.isRateLimited)
            source.invalidate()
        }
        #expect(performs.current == 4)
        #expect(limitedAfterTheNewBurst.all == [true])
    }

    // MARK: Invalidation and shared descriptors

    @Test func invalidatingPausedItemsIsClean() {
        let calls = Counter()
        let changes = Recorder<Bool>()
        let descriptions = Recorder<String>()
        let afterwards = Recorder<String>()
        let pipe = Pipe()
        pipe.write()
        ItemsSupport.onLoopThread { loop in
            let descriptor = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in calls.increment() }
            let source = LoopSource { source in
                calls.increment()
                source.signal()
            }
            let timer = try! LoopTimer(after: .zero, repeating: .milliseconds(1)) { _ in calls.increment() }
            let limit = try! RateLimit(burst: 1, per: .milliseconds(200))
            descriptor.rateLimit = limit
            descriptor.rateLimitHandler = { _, limited in changes.append(limited) }
            source.rateLimit = limit
            source.rateLimitHandler = { _, limited in changes.append(limited) }
            timer.rateLimit = limit
            timer.rateLimitHandler = { _, limited in changes.append(limited) }
            try! loop.add(descriptor)
            try! loop.add(source)
            try! loop.add(timer)
            source.signal()
            ItemsSupport.run(loop) { descriptor.isRateLimited && source.isRateLimited && timer.isRateLimited }
            descriptions.append(loop.description)
            descriptor.invalidate()
            source.invalidate()
            timer.invalidate()
            descriptions.append(loop.description)
            afterwards.append("limited: \(descriptor.isRateLimited || source.isRateLimited || timer.isRateLimited)")
            // Nothing is left: the run finishes at once, and no handler or end of pause is called.
            afterwards.append("run: \(loop.run(in: .default, for: .milliseconds(400)))")
        }
        pipe.close()
        #expect(calls.current == 3)
        #expect(changes.all == [true, true, true])
        #expect(afterwards.all == ["limited: false", "run: finished"])
        let all = descriptions.all
        #expect(all.first?.contains("rate-limited") == true)
        #expect(all.first?.contains("one-shot callbacks scheduled: 3") == true)
        #expect(all.last?.contains("one-shot callbacks") == false)
    }

    @Test func anotherSourceOfTheSameDescriptorKeepsBeingToldDuringAPause() {
        let limitedCalls = Counter()
        let otherCalls = Counter()
        let pipe = Pipe()
        pipe.write()
        ItemsSupport.onLoopThread { loop in
            let limited = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in limitedCalls.increment() }
            limited.rateLimit = try! RateLimit(burst: 1, per: .seconds(60))
            let other = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in otherCalls.increment() }
            try! loop.add(limited)
            try! loop.add(other)
            ItemsSupport.run(loop) { otherCalls.current >= 50 }
            limited.invalidate()
            other.invalidate()
        }
        pipe.close()
        #expect(limitedCalls.current == 1)
        #expect(otherCalls.current >= 50)
    }

    @Test func aPausedSourceWhoseDescriptorAnotherModeWatchesDoesNotSpinTheLoop() {
        let limitedCalls = Counter()
        let otherCalls = Counter()
        let passes = Counter()
        let pipe = Pipe()
        pipe.write()
        let other = Loop.Mode("rate-limit-other")
        ItemsSupport.onLoopThread { loop in
            let limited = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in limitedCalls.increment() }
            limited.rateLimit = try! RateLimit(burst: 1, per: .seconds(60))
            let elsewhere = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in otherCalls.increment() }
            try! loop.add(limited)
            try! loop.add(elsewhere, to: other)
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(Self.passCounter(passes))
            loop.run(in: .default, for: .milliseconds(300))
            // The other mode's source is still told, in its own mode.
            loop.run(in: other, for: .milliseconds(20))
            limited.invalidate()
            elsewhere.invalidate()
        }
        pipe.close()
        #expect(limitedCalls.current == 1)
        #expect(otherCalls.current >= 1)
        #expect(passes.current <= 20)  // Parked: the descriptor no longer woke the default mode's run.
    }

    @Test func itemsPausedWhenTheirThreadExitedWorkInTheLoopTheyJoinNext() throws {
        let performs = Counter()
        let handled = Counter()
        let pipe = Pipe()
        defer { pipe.close() }
        pipe.write()
        let limit = try RateLimit(burst: 1, per: .seconds(60))
        let source = LoopSource { _ in performs.increment() }
        source.rateLimit = limit
        let descriptor = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in handled.increment() }
        descriptor.rateLimit = limit
        ItemsSupport.onLoopThread { loop in
            try! loop.add(source)
            try! loop.add(descriptor)
            source.signal()
            ItemsSupport.run(loop) { performs.current == 1 && descriptor.isRateLimited }
            source.signal()
            ItemsSupport.run(loop) { source.isRateLimited }
        }
        // That loop is gone, with the callbacks that would have ended the pauses: the next loop starts afresh,
        // by the same limit (a new window), and performs the signal kept through the pause.
        #expect(performs.current == 1 && handled.current == 1)
        let running = ItemsSupport.startRunningLoop()
        try running.loop.add(source)
        try running.loop.add(descriptor)
        #expect(waitUntil { performs.current == 2 && handled.current == 2 })
        #expect(waitUntil { descriptor.isRateLimited })  // The descriptor is still readable: its new window is full.
        #expect(!waitUntil(timeout: .milliseconds(100)) { performs.current > 2 || handled.current > 2 })
        source.invalidate()
        descriptor.invalidate()
        running.finish()
    }
}
