import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// PassWorkQueue: batches per pass, order, interleaving with sources, timers and descriptors, keep-alive, sleep.
@Suite struct PassWorkQueueTests {
    // MARK: Batches and order

    @Test func tasksRunInOrderOnTheLoopThreadAndTheRunFinishesWhenDrained() {
        let order = Recorder<Int>()
        let onLoopThread = Recorder<Bool>()
        let result = Box<Loop.RunResult>()
        let pending = Box<Int>()
        onFreshLoop { loop in
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 7)
            for index in 0..<100 {
                queue.enqueue {
                    order.append(index)
                    onLoopThread.append(loop.isCurrent)
                }
            }
            result.value = loop.run(in: .default, for: .seconds(10))
            pending.value = queue.pendingCount
        }
        #expect(order.all == Array(0..<100))
        #expect(onLoopThread.all.allSatisfy { $0 })
        // Only the queue kept the mode alive: once it drained, the run ended as finished, not timed out.
        #expect(result.value == .finished)
        #expect(pending.value == 0)
    }

    @Test func atMostTasksPerPassRunBetweenBeforeWaitingAndAfterWaiting() {
        let log = Recorder<String>()
        onFreshLoop { loop in
            let marker = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
                log.append(activity == .beforeWaiting ? "BW" : "AW")
            }
            try! loop.add(marker)
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 3)
            for _ in 0..<10 { queue.enqueue { log.append("T") } }
            loop.run(in: .default, for: .seconds(10))
        }
        let segments = tasksPerPass(in: log.all)
        #expect(segments.outside == 0)
        #expect(segments.counts == [3, 3, 3, 1])
    }

    @Test func tasksQueuedByTasksRunAfterThoseAlreadyQueued() {
        let order = Recorder<String>()
        onFreshLoop { loop in
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 2)
            queue.enqueue {
                order.append("a")
                queue.enqueue { order.append("d") }
            }
            queue.enqueue { order.append("b") }
            queue.enqueue { order.append("c") }
            loop.run(in: .default, for: .seconds(10))
        }
        #expect(order.all == ["a", "b", "c", "d"])
    }

    @Test func timeBudgetLimitsEachBatch() {
        let log = Recorder<String>()
        onFreshLoop { loop in
            let marker = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
                log.append(activity == .beforeWaiting ? "BW" : "AW")
            }
            try! loop.add(marker)
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: .max, timeBudget: .milliseconds(5))
            for _ in 0..<40 {
                queue.enqueue {
                    spin(.milliseconds(1))
                    log.append("T")
                }
            }
            loop.run(in: .default, for: .seconds(10))
        }
        let segments = tasksPerPass(in: log.all)
        #expect(segments.outside == 0)
        #expect(segments.counts.reduce(0, +) == 40)
        // Each task takes at least 1 ms, so a 5 ms budget stops a batch after 5 tasks at most.
        #expect(segments.counts.allSatisfy { (1...5).contains($0) })
        #expect(segments.counts.count >= 8)
    }

    // MARK: Interleaving

    @Test func aSourceSignalledFromAnotherThreadIsHandledLongBeforeTheQueueDrains() {
        let started = Counter()
        let signalSent = Atomic<Bool>(false)
        let handledAt = Box<Int>()
        let sourceBox = Box<LoopSource>()
        let (_, thread) = startLoopThread { loop in
            let source = LoopSource { _ in handledAt.value = started.current }
            try! loop.add(source)
            sourceBox.value = source
            let queue = try! PassWorkQueue(loop: loop)
            for index in 1...1_000 {
                queue.enqueue {
                    started.increment()
                    // Task 10 holds its batch until the other thread has signalled, so the test does not depend
                    // on how fast that thread gets scheduled.
                    if index == 10 { _ = waitUntil { signalSent.load(ordering: .acquiring) } }
                    if index == 1_000 { loop.stop() }
                }
            }
            loop.run(in: .default, for: .seconds(30))
        }
        #expect(waitUntil { started.current >= 10 })
        sourceBox.value?.signal()
        signalSent.store(true, ordering: .releasing)
        thread.join()
        #expect(started.current == 1_000)
        let position = handledAt.value ?? -1
        #expect((10...12).contains(position), "source handled after task \(position)")
    }

    @Test func aRepeatingTimerFiresBetweenBatches() {
        let started = Counter()
        let fireds = Recorder<Int>()
        onFreshLoop { loop in
            let timer = try! LoopTimer(after: .milliseconds(2), repeating: .milliseconds(2)) { _ in
                fireds.append(started.current)
            }
            try! loop.add(timer)
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 2)
            for index in 1...1_000 {
                queue.enqueue {
                    started.increment()
                    spin(.microseconds(100))
                    if index == 1_000 { loop.stop() }
                }
            }
            loop.run(in: .default, for: .seconds(30))
            timer.invalidate()
        }
        #expect(started.current == 1_000)
        // 1,000 tasks of 100 µs take at least 100 ms: a 2 ms timer fires many times on the way.
        #expect(fireds.count >= 2)
        #expect((fireds.all.first ?? .max) < 900)
    }

    @Test func aReadyDescriptorIsHandledBetweenBatches() {
        let pipe = Pipe()
        defer { pipe.close() }
        let started = Counter()
        let written = Atomic<Bool>(false)
        let handledAt = Box<Int>()
        let (_, thread) = startLoopThread { loop in
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd, events: .readable) { _, _ in
                pipe.drain()
                if handledAt.value == nil { handledAt.value = started.current }
            }
            try! loop.add(source)
            let queue = try! PassWorkQueue(loop: loop)
            for index in 1...500 {
                queue.enqueue {
                    started.increment()
                    if index == 10 { _ = waitUntil { written.load(ordering: .acquiring) } }
                    if index == 500 { loop.stop() }
                }
            }
            loop.run(in: .default, for: .seconds(30))
            source.invalidate()
        }
        #expect(waitUntil { started.current >= 10 })
        pipe.write()
        written.store(true, ordering: .releasing)
        thread.join()
        let position = handledAt.value ?? -1
        #expect((10...12).contains(position), "descriptor handled after task \(position)")
    }

    // MARK: Waking, sleeping, keep-alive

    @Test func enqueueFromAnotherThreadWakesTheLoopAndAnEmptyQueueLetsItSleep() {
        let passes = Counter()
        let ran = Recorder<Int>()
        let queueBox = Box<PassWorkQueue>()
        let result = Box<Loop.RunResult>()
        let (loop, thread) = startLoopThread { loop in
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive)
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in passes.increment() })
            queueBox.value = try! PassWorkQueue(loop: loop, tasksPerPass: 2)
            result.value = loop.run(in: .default, for: .seconds(20))
            keepAlive.invalidate()
        }
        #expect(waitUntil { queueBox.value != nil && loop.isWaiting })
        let before = passes.current
        for index in 0..<5 { queueBox.value?.enqueue { ran.append(index) } }
        #expect(waitUntil { ran.count == 5 })
        // Drained: the loop goes back to sleep instead of spinning.
        #expect(waitUntil { loop.isWaiting })
        let used = passes.current - before
        #expect(used >= 3 && used <= 12, "\(used) passes for 5 tasks, 2 per pass")
        #expect(queueBox.value?.pendingCount == 0)
        loop.stop()
        thread.join()
        #expect(ran.all == [0, 1, 2, 3, 4])
        #expect(result.value == .stopped)
    }

    @Test func tasksQueuedFromAnotherThreadKeepAnOtherwiseEmptyModeRunningUntilDone() {
        let ran = Recorder<Int>()
        let queueBox = Box<PassWorkQueue>()
        let queued = Atomic<Bool>(false)
        let result = Box<Loop.RunResult>()
        let (_, thread) = startLoopThread { loop in
            queueBox.value = try! PassWorkQueue(loop: loop, tasksPerPass: 3)
            _ = waitUntil { queued.load(ordering: .acquiring) }
            result.value = loop.run(in: .default, for: .seconds(10))
        }
        #expect(waitUntil { queueBox.value != nil })
        for index in 0..<10 { queueBox.value?.enqueue { ran.append(index) } }
        queued.store(true, ordering: .releasing)
        thread.join()
        #expect(ran.all == Array(0..<10))
        #expect(result.value == .finished)
    }

    @Test func tasksRunInEveryCommonMode() {
        let modes = Recorder<String>()
        onFreshLoop { loop in
            loop.addCommonMode("tracking")
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 1)
            for _ in 0..<2 { queue.enqueue { modes.append(loop.currentMode?.name ?? "none") } }
            loop.run(in: "tracking", for: .seconds(10), returnAfterSourceHandled: false)
            queue.enqueue { modes.append(loop.currentMode?.name ?? "none") }
            loop.run(in: .default, for: .seconds(10))
        }
        #expect(modes.all == ["tracking", "tracking", "default"])
    }

    @Test func aQueueInAnotherModeWaitsForThatMode() {
        let ran = Counter()
        let ranInDefault = Box<Int>()
        let results = Recorder<Loop.RunResult>()
        onFreshLoop { loop in
            let queue = try! PassWorkQueue(loop: loop, modes: ["batch"])
            let timer = try! LoopTimer(after: .milliseconds(20)) { _ in }
            try! loop.add(timer)
            queue.enqueue { ran.increment() }
            results.append(loop.run(in: .default, for: .seconds(10)))
            ranInDefault.value = ran.current
            results.append(loop.run(in: "batch", for: .seconds(10)))
        }
        #expect(ranInDefault.value == 0)
        #expect(ran.current == 1)
        #expect(results.all == [.finished, .finished])
    }

    // MARK: Cancelling and invalidating

    @Test func cancelAllDropsPendingTasksAndLetsTheRunFinish() {
        let ran = Recorder<Int>()
        let dropped = Box<Int>()
        let stillValid = Box<Bool>()
        let result = Box<Loop.RunResult>()
        onFreshLoop { loop in
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 2)
            for index in 0..<10 {
                queue.enqueue {
                    ran.append(index)
                    if index == 2 { dropped.value = queue.cancelAll() }
                }
            }
            result.value = loop.run(in: .default, for: .seconds(10))
            stillValid.value = queue.isValid
        }
        #expect(stillValid.value == true)
        #expect(ran.all == [0, 1, 2])
        #expect(dropped.value == 7)
        #expect(result.value == .finished)
    }

    @Test func invalidateDropsTasksAndRejectsNewOnes() {
        let ran = Recorder<Int>()
        let accepted = Box<Bool>()
        let state = Box<[Int]>()
        let result = Box<Loop.RunResult>()
        onFreshLoop { loop in
            let queue = try! PassWorkQueue(loop: loop, tasksPerPass: 3)
            for index in 0..<10 {
                queue.enqueue {
                    ran.append(index)
                    if index == 1 { queue.invalidate() }
                }
            }
            result.value = loop.run(in: .default, for: .seconds(10))
            accepted.value = queue.enqueue { ran.append(99) }
            state.value = [queue.isValid ? 1 : 0, queue.pendingCount]
        }
        #expect(state.value == [0, 0])
        #expect(ran.all == [0, 1])
        #expect(accepted.value == false)
        #expect(result.value == .finished)
    }

    @Test func releasingTheQueueDetachesItFromTheLoop() {
        let ran = Counter()
        let result = Box<Loop.RunResult>()
        onFreshLoop { loop in
            var queue: PassWorkQueue? = try! PassWorkQueue(loop: loop)
            queue?.enqueue { ran.increment() }
            queue = nil
            result.value = loop.run(in: .default, for: .seconds(10))
        }
        #expect(ran.current == 0)
        #expect(result.value == .finished)
    }

    @Test func outOfRangeArgumentsThrowInvalidArgument() {
        let codes = Recorder<LoopError.Code>()
        onFreshLoop { loop in
            func attempt(_ make: () throws(LoopError) -> PassWorkQueue) {
                do throws(LoopError) {
                    _ = try make()
                } catch {
                    codes.append(error.code)
                }
            }
            attempt { () throws(LoopError) in try PassWorkQueue(loop: loop, tasksPerPass: 0) }
            attempt { () throws(LoopError) in try PassWorkQueue(loop: loop, timeBudget: .zero) }
            attempt { () throws(LoopError) in try PassWorkQueue(loop: loop, modes: []) }
        }
        #expect(codes.all == [.invalidArgument, .invalidArgument, .invalidArgument])
    }
}

// MARK: Support

/// Runs `body` with a fresh thread's loop and waits for the thread to end.
private func onFreshLoop(_ body: @escaping @Sendable (Loop) -> Void) {
    let (_, thread) = startLoopThread(body)
    thread.join()
}

/// Busy-waits for `duration`, standing in for heavy work.
private func spin(_ duration: Duration) {
    let end = Loop.Instant.now + duration
    while Loop.Instant.now < end {}
}

/// Counts the "T" entries between each "BW" and the following "AW" of `log`, skipping passes with none.
private func tasksPerPass(in log: [String]) -> (counts: [Int], outside: Int) {
    var counts: [Int] = []
    var outside = 0
    var current: Int?
    for entry in log {
        switch entry {
        case "BW": current = 0
        case "AW":
            if let current, current > 0 { counts.append(current) }
            current = nil
        default:
            if current != nil { current! += 1 } else { outside += 1 }
        }
    }
    return (counts, outside)
}
