import CoreFoundation
import Foundation
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// A loop and Foundation's run loop sharing one thread, whichever of the two runs it. Made by
/// ``RunLoopKit/Loop/bridgeToFoundation(mode:)``.
///
/// **Foundation runs the thread** (`RunLoop.main.run()`, `RunLoop.current.run(mode:before:)`): a version-1 source
/// of Foundation's run loop, in its common modes, waits on the loop's `Loop.pollDescriptor`; when it is
/// readable (a signal or a block from another thread, a ready descriptor) Foundation calls the source, which runs one
/// pass of the loop (`Loop.runPass(in:)`). A CF timer of the bridge, in the same modes, is kept at the
/// loop's next timer and runs a pass when it fires, so the loop's timers count as timers in Foundation's terms: like a
/// Foundation `Timer`, they never end `RunLoop.run(mode:before:)` (a source does). The same timer, set for now, runs
/// the pass that work made on the thread by Foundation's side asks for (a block, a timer added in a `Timer`'s
/// callout), the pass after one that answered that more is ready, the first pass, and the first of every run of
/// Foundation's nested in a handler of the loop's. No polling.
///
/// **The loop runs the thread** (`Loop.run()`): an observer of the loop, in its common modes, runs
/// Foundation's run loop once without waiting (`CFRunLoopRunInMode` with a zero timeout) each time the loop is about
/// to sleep, and a one-shot timer of the loop wakes it at the next fire date of Foundation's timers. So Foundation's
/// `Timer`s, `RunLoop.perform` blocks, `NotificationQueue` and `FileHandle`'s background notifications work on the
/// loop's thread. What other threads hand Foundation's run loop directly (a `Timer` added from elsewhere) wakes
/// Foundation's own descriptor, which no public call exposes: it runs at the loop's next wake-up (send it through
/// `Loop.perform(in:_:)` or `DispatchQueue.main` to run it at once).
///
/// A run of either nested in a callout of the other keeps both going: a `RunLoop.main.run(until:)` in a handler of
/// the loop runs the loop's passes, a `Loop.run(in:for:)` in a Foundation callout runs Foundation's.
///
/// On `Loop.main` under Foundation, Foundation serves Dispatch's main queue, as it does without the
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
    /// Foundation's side: the source on the loop's descriptor, the timer that runs a pass at the loop's next timer
    /// (or now, when a pass is due), and the observer that counts Foundation's runs in progress and sees it about to
    /// sleep.
    private var portSource: CFRunLoopSource!
    private var passTimer: CFRunLoopTimer!
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
    /// The fire date ``passTimer`` was last set for; meaningful while it is in Foundation's run loop. Loop thread only.
    private var passTimerDate: CFAbsoluteTime = 0
    /// Whether ``passTimer`` is in Foundation's run loop (in its common modes): it is taken out while no pass is due,
    /// so that Foundation's next timer (`RunLoop.limitDate(forMode:)`) is only ever the loop's next timer or its own.
    private var passTimerIsScheduled = true
    /// The loop's next timer (monotonic nanoseconds) ``passTimer`` was last set for by a pass, or `nil` when it was
    /// set otherwise since (for now, or moved on by CF when it fired): a pass that finds the same next timer leaves
    /// the timer alone instead of setting it again (CF re-arms its timer descriptor on every set). Loop thread only.
    private var passTimerLoopDeadline: Int64?
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
        // Made by bridgeToFoundation already; read without readying the loop for a wait (which would make it
        // readable at once, and CF count the first pass as a handled source): the pass timer runs the first pass.
        port.getPort = { info in (try? FoundationBridge.of(info).loop.makePollDescriptor()) ?? -1 }
        port.perform = { info in FoundationBridge.of(info).foundationAskedForPass() }
        portSource = withUnsafeMutablePointer(to: &port) { context in
            context.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) {
                CFRunLoopSourceCreate(nil, 0, $0)
            }
        }
        var timerContext = CFRunLoopTimerContext(
            version: 0, info: info, retain: nil, release: nil, copyDescription: nil)
        // Fires at once: Foundation's first iteration runs a pass, so work sent before it started is served at once.
        // Repeating, so that it stays valid after it fired; every pass sets its next date, or takes it out.
        passTimerDate = CFAbsoluteTimeGetCurrent()
        passTimer = CFRunLoopTimerCreate(
            nil, passTimerDate, Self.parkingInterval, 0, 0,
            { _, info in FoundationBridge.of(info).passTimerFired() }, &timerContext)
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
        CFRunLoopAddTimer(runLoop, passTimer, kCFRunLoopCommonModes)
        CFRunLoopAddObserver(runLoop, depthObserver, kCFRunLoopCommonModes)
        CFRunLoopWakeUp(runLoop)  // A run of Foundation's in progress on the thread rearms its wait for the timer.
    }

    /// Adds the loop's side to the loop; throws what the loop answers (its thread has exited).
    func addLoopSide() throws(LoopError) {
        try loop.add(sleepObserver, to: .common)
        try loop.add(foundationTimer, to: .common)
        loop.setHostWorkHandler(by: self) { [weak self] in self?.localWorkMade() }
    }

    /// Work was made on the loop's thread while the loop counted as asleep for Foundation: Foundation runs a pass for
    /// it, unless a run of the loop's own is in progress with no run of Foundation's side nested in it (then the
    /// loop's run serves it). Loop thread only.
    private func localWorkMade() {
        if loop.runDepth == 0 || (foundationDepth > 0 && !isInsideFoundationRunOfLoopSide) { passDue() }
    }

    /// The interval of ``passTimer``, whose every pass sets its next date or takes it out of the run loop: this far
    /// ahead (about three years, under CF's limit for an interval) it stands for "not again by itself".
    static let parkingInterval: CFTimeInterval = 100_000_000

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
        CFRunLoopTimerInvalidate(passTimer)
        loop.removeHostWorkHandler(by: self)
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
        case .entry:
            foundationDepth += 1
            guard isValid, !isInsideFoundationRunOfLoopSide else { return }
            // A run of Foundation's nested in a handler of the loop's: CF serves the main queue now, and main-queue work
            // queued before must wake CF alone (through the loop's descriptor it would end a run(mode:before:) as a
            // handled source first, before CF served the queue).
            if loop.isMain && loop.runDepth > 0 { loop.leaveMainQueueToHost() }
            // The loop is not readied for Foundation's wait (a run of its own just ended, or no pass ran yet), or a
            // handler of a run of its own is in progress, which may have made work since a pass of Foundation's side
            // last ran (the loop's run would serve it only after this run of Foundation's): the run's first iteration
            // runs a pass, which also sets the pass timer for the loop's next timer, so that Foundation sees that
            // timer from the start (RunLoop.limitDate(forMode:)).
            if !loop.isWaiting || loop.runDepth > 0 { passDue() }
        case .exit: foundationDepth -= 1
        default:
            // About to sleep. The loop's descriptor only tells of work while the loop counts as asleep, which a pass
            // leaves it and a run of its own ends (a run of Foundation's nested in a handler of the loop starts
            // there): then a pass must come first, and Foundation must not sleep before it. The timer, set for now,
            // ends the wait at once.
            guard isValid, !loop.isWaiting, !isInsideFoundationRunOfLoopSide else { return }
            passDue()
        }
    }

    /// Asks Foundation for a pass at once, through the pass timer (a timer's callout does not end
    /// `RunLoop.run(mode:before:)`, a source's would): work was made on the loop's thread while the loop counted as
    /// asleep, or a pass answered that more is ready. Loop thread only.
    private func passDue() {
        guard isValid else { return }
        let now = CFAbsoluteTimeGetCurrent()
        if passTimerIsScheduled && passTimerDate <= now { return }  // Due already.
        setPassTimer(now)
    }

    /// Sets the pass timer for `date`, or now if that is earlier (in the timer's own callout CF keeps only a date
    /// later than the one it fired for, else it moves the timer on by its interval), and puts it in Foundation's run
    /// loop unless it is there. Loop thread only.
    private func setPassTimer(_ date: CFAbsoluteTime) {
        guard isValid else { return }  // Invalidated in the pass: the timer is out for good.
        passTimerLoopDeadline = nil
        passTimerDate = max(date, CFAbsoluteTimeGetCurrent())
        CFRunLoopTimerSetNextFireDate(passTimer, passTimerDate)
        if !passTimerIsScheduled {
            passTimerIsScheduled = true
            CFRunLoopAddTimer(runLoop, passTimer, kCFRunLoopCommonModes)
        }
    }

    /// The pass timer fired: unless the pass sets it again or takes it out, CF moves it on by its interval.
    private func passTimerFired() {
        passTimerDate = CFAbsoluteTimeGetCurrent() + Self.parkingInterval
        passTimerLoopDeadline = nil
        foundationAskedForPass()
    }

    /// Takes the pass timer out of Foundation's run loop (no timer of the loop's, or the loop runs the thread and its
    /// own runs serve its timers), unless it is out already. Loop thread only.
    private func parkPassTimer() {
        guard isValid, passTimerIsScheduled else { return }
        passTimerIsScheduled = false
        passTimerLoopDeadline = nil
        CFRunLoopRemoveTimer(runLoop, passTimer, kCFRunLoopCommonModes)
    }

    /// Whether Foundation's run in progress is the one the loop's side started (``runFoundation()``).
    private var isInsideFoundationRunOfLoopSide: Bool {
        foundationPollDepth != 0 && foundationDepth <= foundationPollDepth
    }

    /// Foundation called the bridge's source (the loop's descriptor is readable) or its pass timer fired (the loop's
    /// next timer is due, or a pass was asked for).
    private func foundationAskedForPass() {
        guard isValid else { return }
        require(
            loop.isCurrent,
            "RunLoopKitFoundation: Foundation's run loop called the bridge of \(loop) on another thread; bridge the "
                + "loop of the thread that runs Foundation's run loop")
        // Inside the run of Foundation that the loop's side started: the loop runs already, further out.
        if isInsideFoundationRunOfLoopSide {
            parkPassTimer()
            return
        }
        let outer = hostPassDepth
        hostPassDepth = loop.runDepth + 1
        let nextTimer = loop.runHostTimedPass(in: mode, hostServesMainQueue: loop.isMain)
        hostPassDepth = outer
        guard let nextTimer else {  // More is ready: Foundation's next iteration runs it, without sleeping.
            setPassTimer(CFAbsoluteTimeGetCurrent())
            return
        }
        if nextTimer == .max {
            parkPassTimer()
            return
        }
        // Set for that timer already (a pass for a descriptor or another thread's work, the next timer unchanged).
        if passTimerIsScheduled && passTimerLoopDeadline == nextTimer { return }
        // The loop's clock is monotonic, Foundation's dates are wall-clock times: CF turns the date back into its own
        // monotonic time at once, so the two readings are a few microseconds apart. A timer fired that early finds
        // the loop's timer not due yet, and the pass sets it again.
        let now = MonotonicClock.now()
        setPassTimer(CFAbsoluteTimeGetCurrent() + Double(max(nextTimer - now, 0)) / 1e9)
        passTimerLoopDeadline = nextTimer
    }

    // MARK: The loop runs the thread

    /// Runs Foundation's run loop without waiting until it has nothing due, then sets the loop's timer for
    /// Foundation's next timer. From the loop's observer (before it sleeps) and timer, on the loop's thread.
    private func runFoundation() {
        guard isValid else { return }
        // Inside a pass Foundation's side started: Foundation's own iteration goes on after it.
        if hostPassDepth != 0 && loop.runDepth <= hostPassDepth { return }
        parkPassTimer()  // The loop runs the thread: its own runs serve its timers.
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
