import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// An idle bridged pair uses under 1% CPU and wakes no one: in the middle second of a 1.6 s run, `Loop.main` runs
/// no pass (Foundation owns the thread) or never wakes (the loop owns it), with a `LoopSource` and a Foundation
/// `Timer` an hour away registered, so neither side is empty. A thread of its own reads the CPU clocks at the
/// second's start and end, so the run's start-up is not counted and the loop is not woken to read them. The main
/// thread's share is held to 1% in every build, the whole process's to `idleProcessCPUPercentLimit`.
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
    let (processShare, threadShare) = window()
    let wakeUps = wakeTimes.value.filter { $0 > start + 0.3 && $0 < start + 1.3 }.count
    check(threadShare < 1, "idle CPU of the main thread \(threadShare)%")
    check(processShare < idleProcessCPUPercentLimit, "idle CPU \(processShare)%")
    check(wakeUps == 0, "\(wakeUps) passes or wake-ups of Loop.main in one idle second")
    pass(
        "idle_cpu_percent=\((processShare * 100).rounded() / 100) "
            + "main_thread_cpu_percent=\((threadShare * 100).rounded() / 100) loop_wake_ups_per_idle_second=\(wakeUps)")
}

/// Reads, on a thread of its own, the process's CPU and the CPU `clock` counts (a thread's) at `opening` (seconds of
/// ``uptime()``) and one second later; answers a function that waits for that second to end and answers both
/// shares of one CPU, in percent.
private func idleSecondCPU(ofThreadWith clock: clockid_t, from opening: Double) -> () -> (Double, Double) {
    let shares = Shared<(process: Double, thread: Double)?>(nil)
    let sampler = Thread {
        func sleep(until time: Double) { while uptime() < time { usleep(UInt32(max(1, (time - uptime()) * 1e6))) } }
        sleep(until: opening)
        let (processBefore, threadBefore, openedAt) = (processCPUNanoseconds(), cpuNanoseconds(on: clock), uptime())
        sleep(until: opening + 1)
        let (process, thread) = (processCPUNanoseconds() - processBefore, cpuNanoseconds(on: clock) - threadBefore)
        let length = (uptime() - openedAt) * 1e9
        shares.withLock { $0 = (Double(process) / length * 100, Double(thread) / length * 100) }
    }
    sampler.start()
    return {
        waitFor("the idle second's end") { shares.value != nil }
        return shares.value!
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
