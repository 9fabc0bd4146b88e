import Glibc
import RunLoopKit
import RunLoopKitGLib

// The attachment's "run another pass" rules (issue 41): work that only a further pass can serve, made on the main
// thread by a GLib callback or by a handler of the loop, is served within 2 s with no other wake-up: no other thread
// sends anything, and GLib's only other source is the timeout that judges, at 2 s.

/// How long the chains may take: generous (they take a few milliseconds).
private let boundMilliseconds: UInt32 = 2000

/// GLib owns the main thread (`g_main_loop_run`) with `Loop.main` attached; a GLib timeout's callback starts chains
/// of blocks, source performs and zero-delay timers (``PassChains``), each link of which only a later pass serves:
/// every pass answers that more is ready, and the source's `prepare` must ask GLib for the next pass without waiting
/// for the loop's descriptor, which nothing makes readable.
func passRulesAttachedScenario() {
    let glib: GLibCalls
    do { glib = try GLibCalls() } catch { fail("\(error)") }
    do { try Loop.main.attachToGLib() } catch { fail("attach: \(error)") }
    let mainLoop = glib.newMainLoop(nil)
    nonisolated(unsafe) let quitTarget = mainLoop
    let chains = PassChains(loop: .main, length: 100) { glib.quit(quitTarget) }
    glib.addTimeout(nil, milliseconds: 20) {
        chains.start()  // A GLib callback, between two passes.
        return false
    }
    let judge = glib.addTimeout(nil, milliseconds: 20 + boundMilliseconds) {
        glib.quit(quitTarget)
        return false
    }
    glib.run(mainLoop)
    check(chains.isDone, "in \(boundMilliseconds) ms under g_main_loop_run: \(chains.progress)")
    judge.destroy()
    pass("chains_ms=\(rounded(chains.milliseconds))")
}

/// A handler of the loop (a 20 ms `LoopTimer`'s, in a pass GLib dispatched), runs a GLib main loop of its own on the
/// default context (a modal dialog) after queueing a block and starting the chains: inside it the loop does not count
/// as asleep (the pass is in progress), and nothing makes its descriptor readable (the pass's own poll took the
/// timerfd's report before the handler ran; a block's handler would run before that poll, and the eventfd report of
/// the block's post would still be pending), so the source's `prepare` must see that the loop is awake and run its
/// passes there. The chains quit the modal loop once they are done.
func passRulesModalScenario() {
    modalScenario(startingChainsFromGLibCallback: false)
}

/// As ``passRulesModalScenario()``, but the block is queued by a GLib callback inside the modal loop, 20 ms in, and
/// the block starts the chains: by then a pass nested in the modal loop found nothing to do and left the loop counted as
/// asleep, while the outer pass (the timer's handler) is still in progress. Work made on the thread then must reach
/// GLib's next `prepare`; an eventfd write would be needless (the callback runs on the loop's thread).
func passRulesModalCallbackScenario() {
    modalScenario(startingChainsFromGLibCallback: true)
}

private func modalScenario(startingChainsFromGLibCallback: Bool) {
    let glib: GLibCalls
    do { glib = try GLibCalls() } catch { fail("\(error)") }
    do { try Loop.main.attachToGLib() } catch { fail("attach: \(error)") }
    let mainLoop = glib.newMainLoop(nil)
    nonisolated(unsafe) let quitTarget = mainLoop
    let outcome = Shared<(blockRan: Bool, chains: String, done: Bool, milliseconds: Double)?>(nil)
    let opener = try? LoopTimer(after: .milliseconds(20)) { _ in
        let modal = glib.newMainLoop(nil)
        nonisolated(unsafe) let modalTarget = modal
        let blockRan = Shared(false)
        let chains = PassChains(loop: .main, length: 100) { glib.quit(modalTarget) }
        if startingChainsFromGLibCallback {
            glib.addTimeout(nil, milliseconds: 20) {
                // A GLib callback inside the modal loop queues a block (on the loop's thread: no eventfd write),
                // which starts the chains.
                _ = Loop.main.perform {
                    blockRan.withLock { $0 = true }
                    chains.start()
                }
                return false
            }
        } else {
            _ = Loop.main.perform { blockRan.withLock { $0 = true } }
            chains.start()
        }
        let judge = glib.addTimeout(nil, milliseconds: 20 + boundMilliseconds) {
            glib.quit(modalTarget)
            return false
        }
        glib.run(modal)  // The modal loop, inside the pass.
        judge.destroy()
        glib.unref(mainLoop: modal)
        outcome.withLock { $0 = (blockRan.value, chains.progress, chains.isDone, chains.milliseconds) }
        glib.quit(quitTarget)
    }
    do { try Loop.main.add(opener!) } catch { fail("add: \(error)") }
    let judge = glib.addTimeout(nil, milliseconds: 40 + 2 * boundMilliseconds) {
        glib.quit(quitTarget)
        return false
    }
    glib.run(mainLoop)
    judge.destroy()
    guard let result = outcome.value else { fail("the timer that runs the modal loop did not fire") }
    let who = startingChainsFromGLibCallback ? "by a GLib callback inside it" : "before it"
    check(result.blockRan, "a block queued \(who) (a modal GLib loop in a handler) did not run inside it")
    check(
        result.done,
        "in \(boundMilliseconds) ms inside a modal GLib loop in a handler, started \(who): \(result.chains)")
    pass("modal_chains_ms=\(rounded(result.milliseconds))")
}

/// The app runs GLib's main loop twice with `Loop.main` attached, and between the two runs (no GLib dispatch, no run
/// of the loop in progress, the loop counted as asleep by the last pass) queues a block and adds a zero-delay timer
/// on the main thread: the second run serves both within 2 s, with nothing else to wake it.
func passRulesBetweenRunsScenario() {
    let glib: GLibCalls
    do { glib = try GLibCalls() } catch { fail("\(error)") }
    do { try Loop.main.attachToGLib() } catch { fail("attach: \(error)") }
    let mainLoop = glib.newMainLoop(nil)
    nonisolated(unsafe) let quitTarget = mainLoop
    glib.addTimeout(nil, milliseconds: 20) {
        glib.quit(quitTarget)  // The first run ends after passes that found nothing to do.
        return false
    }
    glib.run(mainLoop)
    check(Loop.main.isWaiting, "the first run's last pass did not leave the loop counted as asleep")
    let started = nowNanoseconds()
    let served = Shared((block: false, timer: false))
    let elapsed = Shared<Double?>(nil)
    let finishIfBoth: @Sendable () -> Void = {
        let both = served.withLock { $0.block && $0.timer }
        if both {
            elapsed.withLock { $0 = Double(nowNanoseconds() - started) / 1e6 }
            glib.quit(quitTarget)
        }
    }
    _ = Loop.main.perform {
        served.withLock { $0.block = true }
        finishIfBoth()
    }
    let timer = try? LoopTimer(after: .zero) { _ in
        served.withLock { $0.timer = true }
        finishIfBoth()
    }
    do { try Loop.main.add(timer!) } catch { fail("add: \(error)") }
    let judge = glib.addTimeout(nil, milliseconds: boundMilliseconds) {
        glib.quit(quitTarget)
        return false
    }
    glib.run(mainLoop)
    judge.destroy()
    let result = served.value
    check(result.block, "a block queued between two g_main_loop_runs did not run in the second within 2 s")
    check(result.timer, "a zero-delay timer added between two g_main_loop_runs did not fire in the second within 2 s")
    pass("between_runs_ms=\(rounded(elapsed.value ?? -1))")
}
