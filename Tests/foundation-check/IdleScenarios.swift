import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// An idle bridged pair uses under 1% CPU and wakes no one: in the middle second of a 1.6 s run, `Loop.main` runs
/// no pass (Foundation owns the thread) or never wakes (the loop owns it), with a `LoopSource` and a Foundation
/// `Timer` an hour away registered, so neither side is empty. A thread of its own reads the CPU clocks at the
/// second's start and end, so the run's start-up is not counted and the loop is not woken to read them. The limits
/// are `checkIdleSecond(processCPU:threadCPU:)`'s.
func idleScenario(foundationOwns: Bool) {
    do { try Loop.main.bridgeToFoundation() } catch { fail("bridge: \(error)") }
    let source = LoopSource { _ in }
    try! Loop.main.add(source)
    RunLoop.main.add(Timer(timeInterval: 3600, repeats: false) { _ in }, forMode: .default)
    let wakeTimes = Shared<[Double]>([])
    let counter = LoopObserver(activities: [.entry, .afterWaiting]) { _, _ in
        let now = uptime()
        wakeTimes.withLock { $0.append(now) }
    }
    try! Loop.main.add(counter, to: .common)
    let start = uptime()
    let window = idleSecondCPU(ofThreadWith: callingThreadCPUClock(), from: start + 0.3)
    if foundationOwns {
        RunLoop.main.run(until: Date(timeIntervalSinceNow: 1.6))
    } else {
        Loop.main.run(in: .default, for: .milliseconds(1600))
    }
    let (processCPU, threadCPU) = window()
    let wakeUps = wakeTimes.value.filter { $0 > start + 0.3 && $0 < start + 1.3 }.count
    let figures = checkIdleSecond(processCPU: processCPU, threadCPU: threadCPU)
    check(wakeUps == 0, "\(wakeUps) passes or wake-ups of Loop.main in one idle second")
    pass("\(figures) loop_wake_ups_per_idle_second=\(wakeUps)")
}

/// Reads, on a thread of its own, the process's CPU clock and `clock` (a thread's) at `opening` (seconds of
/// ``uptime()``) and one second later; answers a function that waits for that second to end and answers what each
/// counted in it, in nanoseconds, scaled to exactly one second.
private func idleSecondCPU(ofThreadWith clock: clockid_t, from opening: Double) -> () -> (Int64, Int64) {
    let used = Shared<(process: Int64, thread: Int64)?>(nil)
    let sampler = Thread {
        func sleep(until time: Double) { while uptime() < time { usleep(UInt32(max(1, (time - uptime()) * 1e6))) } }
        sleep(until: opening)
        let (processBefore, threadBefore, openedAt) = (processCPUNanoseconds(), cpuNanoseconds(on: clock), uptime())
        sleep(until: opening + 1)
        let (process, thread) = (processCPUNanoseconds() - processBefore, cpuNanoseconds(on: clock) - threadBefore)
        let length = uptime() - openedAt
        used.withLock { $0 = (Int64(Double(process) / length), Int64(Double(thread) / length)) }
    }
    sampler.start()
    return {
        waitFor("the idle second's end") { used.value != nil }
        return used.value!
    }
}

/// Without the bridge, each owner starves the other's items, silently: what the documentation states.
func unbridgedScenario() {
    let foundationTicks = Count()
    RunLoop.main.add(Timer(timeInterval: 0.01, repeats: true) { _ in foundationTicks.add() }, forMode: .default)
    Loop.main.run(in: .default, for: .milliseconds(300))
    let loopTicks = Count()
    try! Loop.main.add(try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in loopTicks.add() })
    let ticksBefore = foundationTicks.current
    RunLoop.main.run(until: Date(timeIntervalSinceNow: 0.3))
    check(ticksBefore == 0, "Foundation's Timer fired \(ticksBefore) times under Loop.main without the bridge")
    check(loopTicks.current == 0, "a LoopTimer fired \(loopTicks.current) times under RunLoop.main without the bridge")
    pass("foundation_timer_under_loop=\(ticksBefore) loop_timer_under_foundation=\(loopTicks.current)")
}
