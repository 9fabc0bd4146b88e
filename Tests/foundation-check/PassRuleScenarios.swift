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
