import CoreFoundation
import Foundation
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// A loop and Foundation's run loop sharing one thread, whichever of the two runs it. Made by
/// ``RunLoopKit/Loop/bridgeToFoundation(mode:)``.
///
/// **Foundation runs the thread** (`RunLoop.main.run()`, `RunLoop.current.run(mode:before:)`): a version-1 source
/// of Foundation's run loop, in its common modes, waits on the loop's ``RunLoopKit/Loop/pollDescriptor``; when it is
/// readable (a signal or a block from another thread, a due timer, a ready descriptor) Foundation calls the source,
/// which runs one pass of the loop (``RunLoopKit/Loop/runPass(in:)``). When a pass answers that more is ready, a
/// version-0 source of the bridge is signalled, so Foundation's next iteration runs another pass without sleeping.
/// No timer, no polling.
///
/// **The loop runs the thread** (``RunLoopKit/Loop/run()``): an observer of the loop, in its common modes, runs
/// Foundation's run loop once without waiting (`CFRunLoopRunInMode` with a zero timeout) each time the loop is about
/// to sleep, and a one-shot timer of the loop wakes it at the next fire date of Foundation's timers. So Foundation's
/// `Timer`s, `RunLoop.perform` blocks, `NotificationQueue` and `FileHandle`'s background notifications work on the
/// loop's thread. What other threads hand Foundation's run loop directly (a `Timer` added from elsewhere) wakes
/// Foundation's own descriptor, which no public call exposes: it runs at the loop's next wake-up (send it through
/// ``RunLoopKit/Loop/perform(in:_:)`` or `DispatchQueue.main` to run it at once).
///
/// A run of either nested in a callout of the other keeps both going: a `RunLoop.main.run(until:)` in a handler of
/// the loop runs the loop's passes, a ``RunLoopKit/Loop/run(in:for:)`` in a Foundation callout runs Foundation's.
///
/// On ``RunLoopKit/Loop/main`` under Foundation, Foundation serves Dispatch's main queue, as it does without the
/// bridge, and the loop's passes leave it alone; under the loop, the loop serves it.
///
/// Threading: ``invalidate()`` and ``isValid`` are safe from any thread. Every call into the loop and into
/// Foundation's run loop happens on the loop's thread.
public final class FoundationBridge: @unchecked Sendable {
    // Unchecked Sendable: the CF objects are immutable references whose functions are thread-safe; the depths are
    // read and written on the loop's thread only (every callout of both loops runs there); the rest is immutable or
    // atomic.

    /// The loop bridged to Foundation's run loop.
    public let loop: Loop
    /// The loop's mode that Foundation's iterations run.
    public let mode: Loop.Mode

    private let runLoop: CFRunLoop
    private let valid = Atomic<Bool>(true)
    /// Foundation's side: the source on the loop's descriptor, the source that asks for another pass, and the
    /// observer that counts Foundation's runs in progress and sees it about to sleep.
    private var portSource: CFRunLoopSource!
    private var passSource: CFRunLoopSource!
    private var depthObserver: CFRunLoopObserver!
    /// The loop's side: the observer that runs Foundation before the loop sleeps, and the timer at Foundation's next
    /// timer.
    private var sleepObserver: LoopObserver!
    private var foundationTimer: LoopTimer!

    /// How many runs of Foundation's run loop are in progress on the thread (its entry and exit, in common modes).
    private var foundationDepth = 0
    /// The ``foundationDepth`` of the run of Foundation that the loop's side started, `0` while there is none: a call
    /// of Foundation's side from that run is skipped (the loop runs already, further out).
    private var foundationPollDepth = 0
    /// The ``RunLoopKit/Loop/runDepth`` of the pass that Foundation's side started, `0` while there is none: the
    /// loop's side does nothing in that pass (Foundation's iteration goes on after it).
    private var hostPassDepth = 0
    /// The Foundation fire date the timer was last set for.
    private var timerFireDate: CFAbsoluteTime = 0
    /// The last mode of the app's own ``foundationMode(of:)`` answered, with Foundation's name for it.
    private var lastFoundationMode: (Loop.Mode, CFRunLoopMode)?

    /// How many times in a row the loop's side runs Foundation once before it lets the loop go on (it then wakes the
    /// loop, so Foundation gets another turn after the loop's other work).
    static let foundationRunsPerTurn = 64

    init(loop: Loop, mode: Loop.Mode, runLoop: CFRunLoop) {
        self.loop = loop
        self.mode = mode
        self.runLoop = runLoop
        let info = Unmanaged.passUnretained(self).toOpaque()

        var port = CFRunLoopSourceContext1()
        port.version = 1
        port.info = info
        port.getPort = { info in FoundationBridge.of(info).loop.pollDescriptor }
        port.perform = { info in FoundationBridge.of(info).foundationAskedForPass() }
        portSource = withUnsafeMutablePointer(to: &port) { context in
            context.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) {
                CFRunLoopSourceCreate(nil, 0, $0)
            }
        }
        var pass = CFRunLoopSourceContext()
        pass.version = 0
        pass.info = info
        pass.perform = { info in FoundationBridge.of(info).foundationAskedForPass() }
        passSource = CFRunLoopSourceCreate(nil, 0, &pass)
        var observerContext = CFRunLoopObserverContext(
            version: 0, info: info, retain: nil, release: nil, copyDescription: nil)
        let activities = [CFRunLoopActivity.entry, .beforeWaiting, .exit].reduce(0) { $0 | $1.rawValue }
        depthObserver = CFRunLoopObserverCreate(
            nil, activities, true, 0,
            { _, activity, info in FoundationBridge.of(info).foundationObserved(activity) }, &observerContext)

        sleepObserver = LoopObserver(activities: .beforeWaiting, order: Int.max) { [weak self] _, _ in
            self?.runFoundation()
        }
        // Fires at once, so the first pass of the loop's own runs Foundation once; afterwards it is set for
        // Foundation's next timer, and spent (out of the loop's modes, keeping no run going) while there is none.
        foundationTimer = try! LoopTimer(at: .now) { [weak self] _ in self?.runFoundation() }

        CFRunLoopAddSource(runLoop, portSource, kCFRunLoopCommonModes)
        CFRunLoopAddSource(runLoop, passSource, kCFRunLoopCommonModes)
        CFRunLoopAddObserver(runLoop, depthObserver, kCFRunLoopCommonModes)
        // Foundation's first iteration runs a pass: work sent before it started is served at once.
        CFRunLoopSourceSignal(passSource)
        CFRunLoopWakeUp(runLoop)
    }

    /// Adds the loop's side to the loop; throws what the loop answers (its thread has exited).
    func addLoopSide() throws(LoopError) {
        try loop.add(sleepObserver, to: .common)
        try loop.add(foundationTimer, to: .common)
    }

    /// The bridge of each bridged loop: one at a time (it serves both directions).
    static let slots = LoopBridgeSlots<FoundationBridge> { $0.isValid }

    /// Whether the bridge still joins the two loops. Safe from any thread.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Takes the bridge out of both loops for good. Safe from any thread; later calls do nothing.
    ///
    /// On the loop's thread no pass of either side starts after it returns. From another thread, a pass already
    /// begun finishes; none starts after that.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        CFRunLoopSourceInvalidate(portSource)
        CFRunLoopSourceInvalidate(passSource)
        CFRunLoopObserverInvalidate(depthObserver)
        sleepObserver.invalidate()
        foundationTimer.invalidate()
        Self.slots.release(self, of: loop)
        if !loop.isCurrent {
            // A callout of Foundation's may be running on the loop's thread, with this object as its info: keep it
            // until Foundation's next iteration there, which starts after that callout returned.
            CFRunLoopPerformBlock(runLoop, kCFRunLoopCommonModes as CFTypeRef) { withExtendedLifetime(self) {} }
            CFRunLoopWakeUp(runLoop)
        }
    }

    /// The bridge whose CF objects carry `info`.
    fileprivate static func of(_ info: UnsafeMutableRawPointer?) -> FoundationBridge {
        Unmanaged<FoundationBridge>.fromOpaque(info!).takeUnretainedValue()
    }

    // MARK: Foundation runs the thread

    /// Foundation's run loop entered or left a run, or is about to sleep. On the loop's thread.
    private func foundationObserved(_ activity: CFRunLoopActivity) {
        switch activity {
        case .entry: foundationDepth += 1
        case .exit: foundationDepth -= 1
        default:
            // About to sleep. The loop's descriptor only tells of work while the loop counts as asleep, which a pass
            // leaves it and a run of its own ends (a run of Foundation's nested in a handler of the loop starts
            // there): then a pass must come first, and Foundation must not sleep before it.
            guard isValid, !loop.isWaiting, !isInsideFoundationRunOfLoopSide else { return }
            CFRunLoopSourceSignal(passSource)
            CFRunLoopWakeUp(runLoop)
        }
    }

    /// Whether Foundation's run in progress is the one the loop's side started (``runFoundation()``).
    private var isInsideFoundationRunOfLoopSide: Bool {
        foundationPollDepth != 0 && foundationDepth <= foundationPollDepth
    }

    /// Foundation called one of the bridge's sources: the loop's descriptor is readable, or a pass asked for another.
    private func foundationAskedForPass() {
        guard isValid else { return }
        require(
            loop.isCurrent,
            "RunLoopKitFoundation: Foundation's run loop called the bridge of \(loop) on another thread; bridge the "
                + "loop of the thread that runs Foundation's run loop")
        // Inside the run of Foundation that the loop's side started: the loop runs already, further out.
        if isInsideFoundationRunOfLoopSide { return }
        let outer = hostPassDepth
        hostPassDepth = loop.runDepth + 1
        let again = loop.runPass(in: mode, hostServesMainQueue: loop.isMain)
        hostPassDepth = outer
        if again { CFRunLoopSourceSignal(passSource) }  // Foundation's next iteration runs it, without sleeping.
    }

    // MARK: The loop runs the thread

    /// Runs Foundation's run loop without waiting until it has nothing due, then sets the loop's timer for
    /// Foundation's next timer. From the loop's observer (before it sleeps) and timer, on the loop's thread.
    private func runFoundation() {
        guard isValid else { return }
        // Inside a pass Foundation's side started: Foundation's own iteration goes on after it.
        if hostPassDepth != 0 && loop.runDepth <= hostPassDepth { return }
        let foundationMode = foundationMode(of: loop.currentMode ?? mode)
        let outer = foundationPollDepth
        foundationPollDepth = foundationDepth + 1
        var runs = 0
        var overdueRuns = 0
        var nextFireDate: CFAbsoluteTime?  // Foundation's next timer (0: none), once asked.
        while runs < Self.foundationRunsPerTurn {
            runs += 1
            let result = CFRunLoopRunInMode(foundationMode, 0, true)
            if result == .handledSource { continue }
            if result == .finished {  // Nothing in that mode of Foundation's, timers included.
                nextFireDate = 0
                break
            }
            // One iteration of Foundation's serves one of its descriptors: a due timer may still be waiting.
            let next = CFRunLoopGetNextTimerFireDate(runLoop, foundationMode)
            if next != 0 && next <= CFAbsoluteTimeGetCurrent() && overdueRuns < 2 {
                overdueRuns += 1
                continue
            }
            nextFireDate = next
            break
        }
        foundationPollDepth = outer
        scheduleTimer(at: nextFireDate ?? CFRunLoopGetNextTimerFireDate(runLoop, foundationMode))
        if runs == Self.foundationRunsPerTurn { loop.wakeUp() }  // More is ready: another turn after the loop's work.
    }

    /// Sets the loop's timer for `next`, the next fire date of Foundation's timers (`0`: none, and the timer stays
    /// spent).
    private func scheduleTimer(at next: CFAbsoluteTime) {
        guard next != 0 else { return }
        if next == timerFireDate && foundationTimer.isValid { return }
        timerFireDate = next
        // Foundation arms its own timer descriptor for that date; firing 0.2 ms after it, the loop finds the timer due.
        let seconds = max(next - CFAbsoluteTimeGetCurrent(), 0) + 0.000_2
        foundationTimer.setNextFireTime(.now + .nanoseconds(Int64(seconds * 1e9)))
    }

    /// Foundation's mode of the same name as the loop's `mode`; the last one made is kept, so a turn in a mode of
    /// the app's own makes no string. Loop thread only.
    private func foundationMode(of mode: Loop.Mode) -> CFRunLoopMode {
        if mode == .default { return kCFRunLoopDefaultMode }
        if let (name, made) = lastFoundationMode, name == mode { return made }
        let made = CFStringCreateWithCString(nil, mode.name, CFStringBuiltInEncodings.UTF8.rawValue)!
        lastFoundationMode = (mode, made)
        return made
    }
}
