import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// Work made on the main thread by Foundation-side code while Foundation's run loop owns it (`foundationOwns`), or
/// in a Foundation run nested in a loop block while `Loop.main.run` owns it: a `Loop.main.perform {}` queued between
/// two `RunLoop.main.run(until:)` calls and in a Foundation `Timer`'s callout, and a 5 ms `LoopTimer` added in such a
/// callout, each run within Foundation's iterations with no other wake-up (nothing else is scheduled, no other
/// thread sends anything). Also the first `run(mode:before:)` (right after the bridge, or the first in a loop
/// callout) waits its 50 ms, as Foundation alone does, and a 10 ms `LoopTimer` alive does not end
/// `run(mode:before:)` (it counts as a timer, not as a source).
func sameThreadScenario(foundationOwns: Bool) {
    let bridge: FoundationBridge
    do { bridge = try Loop.main.bridgeToFoundation() } catch { fail("bridge: \(error)") }
    if foundationOwns {
        sameThreadChecks(bridge)
    } else {
        Loop.main.perform { sameThreadChecks(bridge) }
        runLoop(until: "the checks in a loop block") { false }
    }
}

/// The checks of ``sameThreadScenario(foundationOwns:)``, on the main thread; ends the process with the verdict.
private func sameThreadChecks(_ bridge: FoundationBridge) {
    // Issue 36, item 2: the first run waits its 50 ms and answers true, as Foundation's run loop alone does.
    let firstStart = uptime()
    let firstResult = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
    let firstWait = (uptime() - firstStart) * 1000
    check(firstResult, "the first run(mode:before:) answered false")
    check(firstWait >= 45, "the first run(mode:before:) returned after \(rounded(firstWait)) ms, not 50")

    // Issue 36, item 1: a block queued between two runs of Foundation's.
    let performedAt = Shared<Double?>(nil)
    let queuedAt = uptime()
    Loop.main.perform { performedAt.withLock { $0 = uptime() } }
    RunLoop.main.run(until: Date(timeIntervalSinceNow: 0.3))
    guard let performed = performedAt.value else { fail("a block queued between two runs did not run in 300 ms") }
    let betweenRuns = (performed - queuedAt) * 1000
    check(betweenRuns < 100, "a block queued between two runs ran after \(rounded(betweenRuns)) ms")

    // Issue 36, item 1: a block and a 5 ms LoopTimer made in a Foundation Timer's callout.
    let madeAt = Shared<Double?>(nil)
    let blockAt = Shared<Double?>(nil)
    let timerAt = Shared<Double?>(nil)
    let callout = Timer(timeInterval: 0.01, repeats: false) { _ in
        madeAt.withLock { $0 = uptime() }
        Loop.main.perform { blockAt.withLock { $0 = uptime() } }
        try! Loop.main.add(try! LoopTimer(after: .milliseconds(5)) { _ in timerAt.withLock { $0 = uptime() } })
    }
    RunLoop.main.add(callout, forMode: .default)
    RunLoop.main.run(until: Date(timeIntervalSinceNow: 0.3))
    guard let made = madeAt.value else { fail("the Foundation Timer did not fire") }
    guard let block = blockAt.value else { fail("a block queued in a Timer's callout did not run in 300 ms") }
    guard let timer = timerAt.value else { fail("a 5 ms LoopTimer added in a Timer's callout did not fire in 300 ms") }
    let blockDelay = (block - made) * 1000
    let timerDelay = (timer - made) * 1000
    check(blockDelay < 100, "a block queued in a Timer's callout ran after \(rounded(blockDelay)) ms")
    check(timerDelay >= 4 && timerDelay < 100, "a 5 ms LoopTimer added in a callout fired after \(timerDelay) ms")

    // Issue 36, item 3: a 10 ms LoopTimer alive does not end run(mode:before:), as a Foundation Timer would not.
    let ticks = Count()
    let ticker = try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in ticks.add() }
    try! Loop.main.add(ticker)
    let tickedStart = uptime()
    _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.1))
    let tickedWait = (uptime() - tickedStart) * 1000
    ticker.invalidate()
    check(ticks.current >= 3, "the 10 ms LoopTimer fired \(ticks.current) times in a 100 ms run(mode:before:)")
    check(tickedWait >= 95, "a 10 ms LoopTimer ended run(mode:before: 100 ms) after \(rounded(tickedWait)) ms")

    let figures =
        "first_run_ms=\(rounded(firstWait)) block_between_runs_ms=\(rounded(betweenRuns)) "
        + "block_in_timer_callout_ms=\(rounded(blockDelay)) loop_timer_5ms_in_callout_ms=\(rounded(timerDelay)) "
        + "run_before_100ms_with_loop_timer_ms=\(rounded(tickedWait)) loop_ticks=\(ticks.current)"
    bridge.invalidate()
    pass(figures)
}
