import CoreFoundation
import Foundation
import RunLoopKit
import RunLoopKitFoundation

// The bridge's "run another pass" rule under Foundation (issue 41): a pass that answers that more is ready sets the
// pass timer for now, so Foundation's next iteration runs the next pass. Foundation's own observers also ask for a
// pass when it is about to sleep or enters a run with the loop awake, which hides a broken rule while Foundation
// sleeps between iterations; so here Foundation never sleeps: a version-0 source of its own is signalled again in
// each of its performs (Foundation busy with its own events), in one CFRunLoopRunInMode that it never leaves
// (RunLoop.run(mode:before:) would return after each source and enter again). No other thread sends anything, and
// nothing else is scheduled.

/// How long the chains may take: generous (they take a few milliseconds).
private let boundSeconds = 2.0

/// The busy source's performs, and the source (main thread only).
nonisolated(unsafe) private var busyPerforms = 0
nonisolated(unsafe) private var busySource: CFRunLoopSource?

/// Foundation's run loop owns the main thread with `Loop.main` bridged, busy with a version-0 source of its own; a
/// Foundation Timer's callout starts chains of blocks, source performs and zero-delay timers (``PassChains``), each
/// link of which only a later pass serves. They complete within 2 s, and the run is stopped when they do.
func passRulesFoundationOwnsScenario() {
    let bridge: FoundationBridge
    do { bridge = try Loop.main.bridgeToFoundation() } catch { fail("bridge: \(error)") }
    let runLoop = CFRunLoopGetMain()
    let chains = PassChains(loop: .main, length: 100) { CFRunLoopStop(CFRunLoopGetMain()) }
    var context = CFRunLoopSourceContext(
        version: 0, info: nil, retain: nil, release: nil, copyDescription: nil, equal: nil, hash: nil,
        schedule: nil, cancel: nil,
        perform: { _ in
            busyPerforms += 1
            CFRunLoopSourceSignal(busySource)  // Busy again: Foundation's next iteration polls, never sleeps.
        })
    busySource = CFRunLoopSourceCreate(nil, 0, &context)
    CFRunLoopAddSource(runLoop, busySource, kCFRunLoopDefaultMode)
    let starter = Timer(timeInterval: 0.02, repeats: false) { _ in chains.start() }  // A Foundation callout.
    RunLoop.main.add(starter, forMode: .default)
    CFRunLoopSourceSignal(busySource)
    let started = uptime()
    let result = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0.02 + boundSeconds, false)
    let elapsed = uptime() - started
    CFRunLoopSourceInvalidate(busySource)
    check(busyPerforms > 10, "Foundation's busy source ran \(busyPerforms) times")
    check(
        chains.isDone,
        "in \(boundSeconds) s under CFRunLoopRunInMode (\(result.rawValue), \(rounded(elapsed)) s) with Foundation "
            + "busy: \(chains.progress)")
    bridge.invalidate()
    pass("chains_ms=\(rounded(chains.milliseconds)) busy_performs=\(busyPerforms)")
}

/// `Loop.main.run` owns the main thread; in a block of it, one CFRunLoopRunInMode of Foundation's. A Foundation Timer's
/// callout there runs the loop for 5 ms (a run of the loop's own, nested in a handler of the loop's: it ends awake,
/// and only an outermost run makes the descriptor readable as it ends). Foundation, about to sleep afterwards, must
/// ask for a pass first, which readies the loop: then a block another thread posts 100 ms later wakes it through the
/// descriptor and runs at once. Without that pass the post finds the loop awake, writes nothing, and waits for the
/// end of Foundation's 2 s run.
func passRulesNestedOwnRunScenario() {
    let bridge: FoundationBridge
    do { bridge = try Loop.main.bridgeToFoundation() } catch { fail("bridge: \(error)") }
    let nestedRunEndedAt = Shared<Double?>(nil)
    let postedAt = Shared<Double?>(nil)
    let ranAt = Shared<Double?>(nil)
    Loop.main.perform {
        let callout = Timer(timeInterval: 0.02, repeats: false) { _ in
            Loop.main.run(in: .default, for: .milliseconds(5))
            nestedRunEndedAt.withLock { $0 = uptime() }
        }
        RunLoop.main.add(callout, forMode: .default)
        Thread.detachNewThread {
            waitFor("the nested run's end") { nestedRunEndedAt.value != nil }
            usleep(100_000)
            postedAt.withLock { $0 = uptime() }
            _ = Loop.main.perform {
                ranAt.withLock { $0 = uptime() }
                CFRunLoopStop(CFRunLoopGetMain())
            }
        }
        _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0.02 + boundSeconds, false)
        guard let posted = postedAt.value else { fail("the other thread did not post within the run") }
        guard let ran = ranAt.value else {
            fail("a block another thread posted after a nested run of the loop did not run within \(boundSeconds) s")
        }
        let delay = (ran - posted) * 1000
        check(
            delay < 500, "a block another thread posted after a nested run of the loop ran after \(rounded(delay)) ms")
        bridge.invalidate()
        pass("post_after_nested_run_ms=\(rounded(delay))")
    }
    runLoop(until: "the checks in a loop block") { false }
}
