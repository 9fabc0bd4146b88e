import Dispatch
import Glibc
import RunLoopKit
import Synchronization

/// The main-queue kind of `Loop.main.handOverLatencies()` (#38): each drain is one sample, measured from the
/// `epoll_wait` that reported Dispatch's eventfd, so the time the pass spends on earlier steps counts.
///
/// 1. Twenty blocks queued from another thread, each to a sleeping main loop: twenty samples, no block or job
///    samples, and each small (the loop does nothing else between the wake-up and the drain).
/// 2. A pass woken with a due timer and main-queue work at once runs the timer first (step 9, as CF does) and drains
///    after it: a timer that holds the loop for 60 ms makes that drain's sample at least 60 ms.
func handOverLatencyScenario() {
    let loop = Loop.main
    loop.enableHandOverLatencies()

    // 1. Wake-ups.
    let rounds = 20
    let drained = Shared(0)
    DispatchQueue.global().async {
        for round in 0..<rounds {
            waitUntilMainLoopSleeps()
            DispatchQueue.main.async { drained.withLock { $0 += 1 } }
            waitFor("main-queue block \(round + 1) to run") { drained.value == round + 1 }
        }
        loop.perform { loop.stop() }
    }
    let wakeResult = loop.run(in: .default, for: .seconds(60))
    check(wakeResult == .stopped, "the wake-up run answered \(wakeResult) after \(drained.value) of \(rounds) blocks")
    guard let woken = loop.handOverLatencies() else { fail("the main loop recorded no hand-over latencies") }
    check(woken.mainQueue.count == rounds, "\(woken.mainQueue.count) main-queue samples for \(rounds) drains")
    check(woken.jobs.count == 0, "\(woken.jobs.count) actor-job samples, none expected")
    check(woken.mainQueue.maximum < .seconds(5), "a drain of a woken, idle main loop took \(woken.mainQueue.maximum)")

    // 2. A timer ahead of the drain in the same pass.
    loop.resetHandOverLatencies()
    let busy = Duration.milliseconds(60)
    let finished = Shared(false)
    let first = try! LoopTimer(after: .zero) { _ in
        // Queued here, on the main thread: its eventfd is reported by the next pass's wait, together with the timer
        // below, due now.
        DispatchQueue.main.async { finished.withLock { $0 = true } }
        let holder = try! LoopTimer(after: .zero) { _ in
            let end = Loop.Instant.now + busy
            while Loop.Instant.now < end {}
        }
        try! loop.add(holder)
    }
    try! loop.add(first)
    let deadline = Loop.Instant.now + .seconds(30)
    while !finished.value && Loop.Instant.now < deadline { loop.run(in: .default, for: .seconds(1)) }
    check(finished.value, "the main-queue block queued behind the timer never ran")
    guard let held = loop.handOverLatencies() else { fail("the main loop's hand-over latencies went away") }
    check(held.mainQueue.count == 1, "\(held.mainQueue.count) main-queue samples after the reset, 1 expected")
    check(
        held.mainQueue.maximum >= busy,
        "the drain behind a \(busy) timer waited \(held.mainQueue.maximum): the timer's time was not counted")
    check(held.timers.count == 2, "\(held.timers.count) timer samples, 2 expected")
    pass(
        "wake_max_us=\(microseconds(woken.mainQueue.maximum)) held_us=\(microseconds(held.mainQueue.maximum))")
}

/// `duration` in whole microseconds.
private func microseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
}
