import Dispatch
import Glibc
import RunLoopKit
import Synchronization

/// `DispatchQueue.main.async` from another thread wakes the sleeping main loop (nothing else is in its mode)
/// and runs on the main thread; 50 times, with the delay from the call to the block.
func wakeScenario() {
    let rounds = 50
    let latencies = Shared<[Int64]>([])
    let offMain = Shared(0)
    let sent = Shared<Int64>(0)
    DispatchQueue.global().async {
        for round in 0..<rounds {
            waitUntilMainLoopSleeps()
            sent.withLock { $0 = nowNanoseconds() }
            DispatchQueue.main.async {
                let delay = nowNanoseconds() - sent.value
                if !onMainThread { offMain.withLock { $0 += 1 } }
                let count = latencies.withLock { list in
                    list.append(delay)
                    return list.count
                }
                if count == rounds { Loop.main.stop() }
            }
            let deadline = nowNanoseconds() + 10_000_000_000
            while latencies.value.count == round {
                if nowNanoseconds() > deadline { fail("block \(round) did not run within 10 s") }
                usleep(50)
            }
        }
    }
    let result = Loop.main.run(in: .default, for: .seconds(60))
    check(result == .stopped, "run answered \(result), \(latencies.value.count) of \(rounds) blocks ran")
    check(offMain.value == 0, "\(offMain.value) blocks ran off the main thread")
    pass(summary(latencies.value, "wake"))
}

@MainActor var mainActorCalls = 0

/// Answers whether the caller runs on the main loop's thread inside one of its runs.
@MainActor func mainActorProbe() -> Bool {
    mainActorCalls += 1
    return Loop.main.isCurrent && Loop.main.currentMode == .default
}

/// A `@MainActor` function awaited from a detached task completes on the main loop; 1,000 round trips timed.
func mainActorScenario() {
    let rounds = 1000
    let outcome = Shared<(onLoop: Int, samples: [Int64])>((0, []))
    Task.detached {
        for _ in 0..<rounds {
            let start = nowNanoseconds()
            let onLoop = await mainActorProbe()
            let elapsed = nowNanoseconds() - start
            outcome.withLock {
                if onLoop { $0.onLoop += 1 }
                $0.samples.append(elapsed)
            }
        }
        Loop.main.stop()
    }
    let result = Loop.main.run(in: .default, for: .seconds(60))
    let (onLoop, samples) = outcome.value
    check(result == .stopped, "run answered \(result) after \(samples.count) of \(rounds) calls")
    check(onLoop == rounds, "\(rounds - onLoop) calls ran outside the main loop's run")
    let calls = MainActor.assumeIsolated { mainActorCalls }
    check(calls == rounds, "the main-actor function ran \(calls) times, expected \(rounds)")
    pass(summary(samples, "roundtrip"))
}

/// Nothing is serviced while the main loop runs a mode that is not common; the next common-mode run serves it.
func nonCommonModeScenario() {
    let ran = Shared<Loop.Mode??>(nil)
    let timer = try! LoopTimer(after: .seconds(3600)) { _ in }
    do { try Loop.main.add(timer, to: "private") } catch { fail("add: \(error)") }
    DispatchQueue.global().async {
        DispatchQueue.main.async { ran.withLock { $0 = .some(Loop.main.currentMode) } }
    }
    let privateResult = Loop.main.run(in: "private", for: .milliseconds(500))
    check(privateResult == .timedOut, "the private-mode run answered \(privateResult)")
    check(ran.value == nil, "main-queue work ran during the private-mode run")
    let defaultResult = Loop.main.run(in: .default, for: .seconds(10), returnAfterSourceHandled: true)
    check(defaultResult == .handledSource, "the default-mode run answered \(defaultResult)")
    check(ran.value == .some(.default), "main-queue work ran in \(String(describing: ran.value))")
    pass("private=timedOut default=handledSource")
}

/// Main-queue work from one thread runs in the order it was queued.
func fifoScenario() {
    let count = 10_000
    let received = Shared<[Int]>([])
    DispatchQueue.global().async {
        for index in 0..<count {
            DispatchQueue.main.async {
                let total = received.withLock { list in
                    list.append(index)
                    return list.count
                }
                if total == count { Loop.main.stop() }
            }
        }
    }
    let result = Loop.main.run(in: .default, for: .seconds(60))
    let list = received.value
    check(result == .stopped, "run answered \(result) after \(list.count) of \(count) items")
    check(list == Array(0..<count), "items ran out of order")
    pass("items=\(count)")
}

/// 100,000 main-queue items from 4 threads all run exactly once, each producer's in order.
func stressScenario() {
    let producers = 4
    let perProducer = 25_000
    let total = producers * perProducer
    let runs = Shared<[Int]>(Array(repeating: 0, count: total))
    let lastSeen = Shared<[Int]>(Array(repeating: -1, count: producers))
    let outOfOrder = Shared(0)
    let done = Shared(0)
    let start = nowNanoseconds()
    for producer in 0..<producers {
        DispatchQueue.global().async {
            for index in 0..<perProducer {
                DispatchQueue.main.async {
                    runs.withLock { $0[producer * perProducer + index] += 1 }
                    lastSeen.withLock { seen in
                        if seen[producer] != index - 1 { outOfOrder.withLock { $0 += 1 } }
                        seen[producer] = index
                    }
                    if done.withLock({
                        $0 += 1
                        return $0
                    }) == total {
                        Loop.main.stop()
                    }
                }
            }
        }
    }
    let result = Loop.main.run(in: .default, for: .seconds(120))
    let elapsed = nowNanoseconds() - start
    let counts = runs.value
    check(result == .stopped, "run answered \(result) after \(done.value) of \(total) items")
    check(counts.allSatisfy { $0 == 1 }, "items ran other than once: \(counts.filter { $0 != 1 }.count)")
    check(outOfOrder.value == 0, "\(outOfOrder.value) items ran out of their producer's order")
    pass("items=\(total) producers=\(producers) ms=\(elapsed / 1_000_000)")
}

/// A run nested inside main-queue work does not drain the main queue again: with its mode otherwise empty it
/// finishes at once, and work queued meanwhile runs after the outer drain.
func nestedRunScenario() {
    let order = Shared<[String]>([])
    DispatchQueue.main.async {
        order.withLock { $0.append("first") }
        DispatchQueue.main.async { order.withLock { $0.append("second") } }
        let nested = Loop.main.run(in: .default, for: .seconds(5))
        order.withLock { $0.append("nested \(nested)") }
        DispatchQueue.main.async { Loop.main.stop() }
    }
    let result = Loop.main.run(in: .default, for: .seconds(30))
    check(result == .stopped, "run answered \(result)")
    let list = order.value
    check(list == ["first", "nested finished", "second"], "order was \(list)")
    pass("order=\(list.joined(separator: ","))")
}

/// Draining the main queue counts as handling a source, as in CF.
func handledSourceScenario() {
    let ran = Shared(false)
    DispatchQueue.global().async {
        waitUntilMainLoopSleeps()
        DispatchQueue.main.async { ran.withLock { $0 = true } }
    }
    let before = Loop.main.metrics
    let result = Loop.main.run(in: .default, for: .seconds(30), returnAfterSourceHandled: true)
    check(result == .handledSource, "run answered \(result)")
    check(ran.value, "the run answered handledSource before the main-queue work ran")
    let drains = (Loop.main.metrics.handled - before.handled).mainQueueDrains
    check(drains == 1, "the metrics counted \(drains) main-queue drains, not 1")
    pass("result=handledSource drains=1")
}

/// With the main queue ignored, the main loop behaves like any loop: an empty mode finishes at once, and
/// main-queue work waits.
func optOutScenario() {
    Loop.main.servesMainQueue = false
    let ran = Shared(false)
    DispatchQueue.main.async { ran.withLock { $0 = true } }
    let empty = Loop.main.run(in: .default, for: .seconds(10))
    check(empty == .finished, "an empty run answered \(empty)")
    check(!ran.value, "main-queue work ran while the main queue was ignored")
    Loop.main.servesMainQueue = true
    let served = Loop.main.run(in: .default, for: .seconds(10), returnAfterSourceHandled: true)
    check(served == .handledSource && ran.value, "after opting back in the run answered \(served)")
    pass("off=finished on=handledSource")
}

@MainActor var mainActorTicks = 0

/// A handler of an item on `Loop.main` (not a main-queue callout) may enter the main actor with
/// `MainActor.assumeIsolated`: it runs on the main thread, whose queue is the main queue.
func assumeIsolatedScenario() {
    let timer = try! LoopTimer(after: .milliseconds(1)) { _ in
        MainActor.assumeIsolated { mainActorTicks += 1 }
        Loop.main.stop()
    }
    try! Loop.main.add(timer)
    let result = Loop.main.run(in: .default, for: .seconds(30))
    check(result == .stopped, "run answered \(result)")
    check(MainActor.assumeIsolated { mainActorTicks } == 1, "the handler did not run")
    pass("ticks=1")
}

/// `mainQueueKeepsRunAlive = false`, as a script sets it: `run()` on the main thread finishes once its items are
/// done, after serving the main-queue work queued before and during the run (none of it is lost), while the
/// main-queue work itself keeps the run going only while it is queued.
func scriptEndsScenario() {
    Loop.main.mainQueueKeepsRunAlive = false
    let order = Shared<[String]>([])
    DispatchQueue.main.async { order.withLock { $0.append("queued before the run") } }
    Task { @MainActor in order.withLock { $0.append("main-actor task") } }
    let timer = try! LoopTimer(after: .milliseconds(20)) { _ in
        order.withLock { $0.append("timer") }
        DispatchQueue.main.async { order.withLock { $0.append("queued by the timer") } }
    }
    try! Loop.main.add(timer)
    let start = nowNanoseconds()
    Loop.main.run()  // Returns: nothing keeps the default mode alive once the one-shot timer fired.
    let elapsed = nowNanoseconds() - start
    let seen = order.value
    check(seen.count == 4, "ran \(seen)")
    check(seen.firstIndex(of: "timer")! < seen.firstIndex(of: "queued by the timer")!, "order \(seen)")
    check(elapsed < 10_000_000_000, "run() took \(elapsed / 1_000_000) ms")
    // Nothing at all: an empty run answers finished at once, as on any thread.
    let empty = Loop.main.run(in: .default, for: .seconds(10))
    check(empty == .finished, "an empty run answered \(empty)")
    // Back to CF's rule: the main queue keeps the run going until it is stopped.
    Loop.main.mainQueueKeepsRunAlive = true
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(50)) { Loop.main.stop() }
    let kept = Loop.main.run(in: .default, for: .seconds(10))
    check(kept == .stopped, "with the main queue keeping it alive the run answered \(kept)")
    pass("script_run_ms=\(elapsed / 1_000_000)")
}

/// Main-actor state touched by the items of `mainActorHandlersScenario`.
@MainActor private var isolatedHandlerCalls: [String] = []

/// Items of every kind, and a one-shot callback, made through `Loop.main.assumeIsolated()` from main-actor code: each
/// handler touches main-actor state directly (no `assumeIsolated` in the handler, no `@Sendable`); the same items are
/// pinned to `Loop.main`, so another loop refuses them with `ownedByAnotherLoop`.
func mainActorHandlersScenario() {
    MainActor.assumeIsolated { mainActorHandlers() }
}

@MainActor private func mainActorHandlers() {
    let loop = Loop.main
    let view = loop.assumeIsolated()
    let pipe = UnsafeMutablePointer<CInt>.allocate(capacity: 2)
    check(Glibc.pipe(pipe) == 0, "pipe failed")
    let source = view.makeSource { _ in isolatedHandlerCalls.append("source") }
    let sourceWithItem = view.makeSource { source in
        isolatedHandlerCalls.append("source(item)")
        source.invalidate()
    }
    let descriptor = try! view.makeDescriptorSource(descriptor: pipe[0]) { source, _ in
        isolatedHandlerCalls.append("descriptor")
        source.invalidate()
    }
    // Entry: every run sends it (a busy run may never sleep, so beforeWaiting could not be relied on).
    let observer = view.makeObserver(activities: .entry, repeats: false) { _, _ in
        isolatedHandlerCalls.append("observer")
    }
    // Repeating: it stops the run once every other handler was called (under a sanitizer the one-shot callback,
    // scheduled later, can come due after a timer made this early).
    let timer = try! view.makeTimer(at: .now + .milliseconds(5), repeating: .milliseconds(5)) { timer in
        if !isolatedHandlerCalls.contains("timer") { isolatedHandlerCalls.append("timer") }
        if isolatedHandlerCalls.count >= 9 {
            timer.invalidate()
            Loop.main.stop()
        }
    }
    // Refused by another loop: they are pinned to the main loop.
    let other = try! LoopThread(name: "not-main")
    for item in [source, timer, observer, descriptor] as [LoopItem] {
        do {
            try other.loop.add(item)
            fail("another loop accepted an item made through Loop.main.assumeIsolated()")
        } catch {
            check(error.code == .ownedByAnotherLoop, "another loop threw \(error)")
        }
    }
    other.stop()

    try! loop.add(source)
    try! loop.add(sourceWithItem)
    try! loop.add(descriptor)
    try! loop.add(observer)
    try! view.schedule(at: .now + .milliseconds(1)) { isolatedHandlerCalls.append("callback") }
    // The `after:` and `perform` forms, with the same arguments as the plain ones.
    try! view.schedule(after: .milliseconds(1)) { isolatedHandlerCalls.append("callback after") }
    try! loop.add(try! view.makeTimer(after: .milliseconds(1)) { _ in isolatedHandlerCalls.append("timer after") })
    view.perform { isolatedHandlerCalls.append("block") }
    source.signal()
    sourceWithItem.signal()
    var byte: UInt8 = 1
    check(write(pipe[1], &byte, 1) == 1, "write failed")
    try! loop.add(timer)
    let result = loop.run(in: .default, for: .seconds(30))
    check(result == .stopped, "run answered \(result)")
    let calls = isolatedHandlerCalls
    let expected: Set = [
        "source", "source(item)", "descriptor", "observer", "callback", "timer", "callback after", "timer after",
        "block",
    ]
    check(Set(calls) == expected, "calls \(calls)")
    source.invalidate()
    close(pipe[0])
    close(pipe[1])
    pass("calls=\(calls.count)")
}
