import Dispatch
import Glibc
import RunLoopKit
import RunLoopKitGLib
import Synchronization

/// True while the main thread is inside `g_main_loop_run`.
let insideGLibRun = Atomic<Bool>(false)

@MainActor var mainActorCalls = 0

/// Answers whether the caller runs on the main thread inside a pass of `Loop.main` that GLib's run dispatched.
@MainActor func mainActorProbe() -> Bool {
    mainActorCalls += 1
    return Loop.main.isCurrent && Loop.main.currentMode == .default && insideGLibRun.load(ordering: .relaxed)
}

/// GLib owns the main thread (`g_main_loop_run` on the default context) with `Loop.main` attached: main-queue work
/// queued before the run starts is served by its first iteration, main-queue work from another thread wakes the
/// sleeping GLib loop 50 times (timed), and 200 `@MainActor` calls awaited from a detached task complete, all on the
/// main thread inside GLib's run, next to a GLib timeout that keeps ticking.
func attachedScenario() {
    let glib: GLibCalls
    do { glib = try GLibCalls() } catch { fail("\(error)") }
    let early = Shared(false)
    DispatchQueue.main.async { early.withLock { $0 = onMainThread && insideGLibRun.load(ordering: .relaxed) } }
    do { try Loop.main.attachToGLib() } catch { fail("attach: \(error)") }
    let mainLoop = glib.newMainLoop(nil)
    nonisolated(unsafe) let quitTarget = mainLoop
    let glibTicks = Shared(0)
    glib.addTimeout(nil, milliseconds: 5) {
        glibTicks.withLock { $0 += 1 }
        return true
    }

    let rounds = 50
    let latencies = Shared<[Int64]>([])
    let offMain = Shared(0)
    let actorCalls = Shared(0)
    DispatchQueue.global().async {
        waitFor("the block queued before the run") { early.value }
        for round in 0..<rounds {
            waitFor("the main loop's sleep") { Loop.main.isWaiting }
            let sent = nowNanoseconds()
            DispatchQueue.main.async {
                let delay = nowNanoseconds() - sent
                if !onMainThread || !insideGLibRun.load(ordering: .relaxed) { offMain.withLock { $0 += 1 } }
                latencies.withLock { $0.append(delay) }
            }
            waitFor("main-queue block \(round)") { latencies.value.count == round + 1 }
        }
        Task.detached {
            for _ in 0..<200 where await mainActorProbe() { actorCalls.withLock { $0 += 1 } }
            glib.invoke(nil) { glib.quit(quitTarget) }
        }
    }
    insideGLibRun.store(true, ordering: .relaxed)
    glib.run(mainLoop)
    insideGLibRun.store(false, ordering: .relaxed)

    check(early.value, "main-queue work queued before the run did not run inside it")
    check(latencies.value.count == rounds, "\(latencies.value.count) of \(rounds) main-queue blocks ran")
    check(offMain.value == 0, "\(offMain.value) main-queue blocks ran outside GLib's run on the main thread")
    check(actorCalls.value == 200, "\(actorCalls.value) of 200 main-actor calls ran inside GLib's run")
    check(glibTicks.value > 0, "GLib's own timeout never ran")
    pass(summary(latencies.value, "wake") + " glib_ticks=\(glibTicks.value)")
}

/// GLib owns the main thread with `Loop.main` attached and nothing to do for a second: the process uses under 1% of
/// a CPU, and the loop runs no pass.
func idleAttachedScenario() {
    let glib: GLibCalls
    do { glib = try GLibCalls() } catch { fail("\(error)") }
    do { try Loop.main.attachToGLib() } catch { fail("attach: \(error)") }
    let passes = Shared(0)
    let observer = LoopObserver(activities: .entry) { _, _ in passes.withLock { $0 += 1 } }
    do { try Loop.main.add(observer) } catch { fail("add: \(error)") }
    let mainLoop = glib.newMainLoop(nil)
    nonisolated(unsafe) let quitTarget = mainLoop
    let window = Shared<(cpu: Int64, threadCPU: Int64, passes: Int)>((0, 0, 0))
    // The window opens 200 ms in (past start-up), and closes a second later.
    glib.addTimeout(nil, milliseconds: 200) {
        window.withLock { $0 = (processCPUNanoseconds(), threadCPUNanoseconds(), passes.value) }
        glib.addTimeout(nil, milliseconds: 1000) {
            let (cpuBefore, threadCPUBefore, passesBefore) = window.value
            window.withLock {
                $0 = (
                    processCPUNanoseconds() - cpuBefore, threadCPUNanoseconds() - threadCPUBefore,
                    passes.value - passesBefore
                )
            }
            glib.quit(quitTarget)
            return false
        }
        return false
    }
    glib.run(mainLoop)
    let (cpu, threadCPU, passesDuring) = window.value
    check(passesDuring == 0, "the idle loop ran \(passesDuring) passes in a second")
    let figures = checkIdleSecond(processCPU: cpu, threadCPU: threadCPU)
    pass("\(figures) passes=\(passesDuring)")
}
