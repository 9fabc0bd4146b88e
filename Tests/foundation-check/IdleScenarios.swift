import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// An idle bridged pair uses under 1% CPU and wakes no one: in the middle second of a 1.6 s run, `Loop.main` runs
/// no pass (Foundation owns the thread) or never wakes (the loop owns it), with a `LoopSource` and a Foundation
/// `Timer` an hour away registered, so neither side is empty.
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
    let cpuBefore = processCPUSeconds()
    let start = uptime()
    if foundationOwns {
        RunLoop.main.run(until: Date(timeIntervalSinceNow: 1.6))
    } else {
        Loop.main.run(in: .default, for: .milliseconds(1600))
    }
    let elapsed = uptime() - start
    let cpuShare = (processCPUSeconds() - cpuBefore) / elapsed * 100
    let wakeUps = wakeTimes.value.filter { $0 > start + 0.3 && $0 < start + 1.3 }.count
    check(cpuShare < 1, "idle CPU \(cpuShare)%")
    check(wakeUps == 0, "\(wakeUps) passes or wake-ups of Loop.main in one idle second")
    pass("idle_cpu_percent=\((cpuShare * 100).rounded() / 100) loop_wake_ups_per_idle_second=\(wakeUps)")
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
