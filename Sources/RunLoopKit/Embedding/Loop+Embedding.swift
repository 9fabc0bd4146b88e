import RunLoopKitSystem

// MARK: package seam (the bridges: RunLoopKitGLib, RunLoopKitFoundation; see Loop+PackageSeam.swift): the `package`
// declarations below, beside the public embedding API they extend.

/// Driving a loop from another event loop (GLib, SwiftNIO, a plain `poll()` loop) on the loop's own thread, as
/// libuv's `uv_backend_fd` and `UV_RUN_NOWAIT` allow.
///
/// The host waits on ``pollDescriptor`` with its own mechanism and, whenever that descriptor is readable (or
/// ``runPass(in:)`` answered `true`), calls ``runPass(in:)``. Between two calls the loop counts as asleep: other
/// threads that signal it, post blocks to it or change its items write its wake-up eventfd, which makes
/// ``pollDescriptor`` readable, exactly as they would wake it from `epoll_wait`; so does the host's own code when it
/// posts a block to the loop or adds or moves a timer on the loop's thread between two passes.
extension Loop {
    /// A descriptor that polls readable (`POLLIN`) when the loop has something to do: a ready descriptor source,
    /// a due timer (the timerfd is armed for the next one), or a wake-up from another thread (a signal, a block, an
    /// item change, ``wakeUp()``). Safe from any thread; valid until the loop's thread exits, after which (and for a
    /// loop made before `fork()`, read in the child) it is -1. Never read it, close it or change it: only wait for it
    /// to be readable, with `poll(2)` or in an epoll set of the host's own.
    ///
    /// It is an epoll set holding the loop's own, made when it is first read (one descriptor more for an embedded
    /// loop; a loop that is never embedded has none, and its passes are the same either way). It stays the same file
    /// for the loop's life, also when the loop rebuilds its own set to drop the entry of a descriptor replaced behind
    /// its back (see Reliability.md), so a host may keep it in its epoll set for good.
    ///
    /// Reading it while the loop is not readied for a host's wait (before the first ``runPass(in:)``, or after a
    /// run of its own) makes it readable at once, so the host's first wait ends and its ``runPass(in:)`` readies the
    /// loop: no priming pass is needed before the host's loop starts, and nothing sent meanwhile is missed. Once it
    /// was read, every later run of the loop's own that is not nested in another (`run()`, `run(in:for:)`, started
    /// from a host callback, say) ends the same way, so a host may read the descriptor once and keep it.
    ///
    /// Making it traps, naming the reason, when the process has no descriptor left (`EMFILE`) or the kernel no
    /// memory for it, as ``current`` does: a host cannot be told otherwise.
    public var pollDescriptor: CInt {
        let descriptor: CInt
        do {
            descriptor = try makePollDescriptor()
        } catch {
            trap("RunLoopKit: \(self).pollDescriptor cannot make the host's epoll set: \(error.message)")
        }
        if descriptor >= 0 { poller.readyForHostUnlessWaiting() }
        return descriptor
    }

    /// Makes ``pollDescriptor``'s epoll set unless it exists, without readying the loop for a host; answers it (-1
    /// once the loop's thread exited). For a bridge that can tell its caller what ``pollDescriptor`` would trap on
    /// (GLib, Foundation), before it reads ``pollDescriptor``. Any thread.
    ///
    /// - Throws: ``LoopError/Code/systemCallFailed`` (`EMFILE`, `ENOMEM`) when the set cannot be made.
    @discardableResult
    package func makePollDescriptor() throws(LoopError) -> CInt {
        do {
            return try poller.hostDescriptor()
        } catch {
            throw LoopError(error, context: "making the host's epoll set (pollDescriptor)")
        }
    }

    /// Runs one pass of `mode` without sleeping, then readies ``pollDescriptor`` for the host's wait. Loop thread
    /// only (traps otherwise).
    ///
    /// The pass is `run(in: mode, for: .zero)`: entry and exit observers, blocks, signalled sources, due timers,
    /// ready descriptor sources (and Dispatch's main queue, on the main loop). Afterwards the loop announces that it
    /// sleeps, so work sent from other threads (or made on the loop's thread before the next pass) wakes
    /// ``pollDescriptor``, and arms its timerfd for the mode's next timer.
    ///
    /// `mode` must be a mode, not ``Mode/common`` (a set of modes, which CF's `CFRunLoopRunInMode` answers with
    /// "finished" at once): such a pass would run nothing and leave the host waiting for good, so it traps, saying so.
    /// - Returns: `true` when work is ready already (queued on the loop's own thread, sent by another thread during
    ///   the pass, a timer that is due or due within 20 µs, sooner than a wait could end, or a descriptor source
    ///   still ready because its handler left data unread): call again before waiting. `false`: wait until
    ///   ``pollDescriptor`` is readable, then call again. A host may wait level- or edge-triggered: after `false`,
    ///   every new piece of work makes the descriptor readable anew.
    @discardableResult
    public func runPass(in mode: Mode = .default) -> Bool {
        runPass(in: mode, hostServesMainQueue: false)
    }

    /// ``runPass(in:)`` for a host that serves Dispatch's main queue itself, as CF's run loop does on the main thread
    /// in its common modes (the Foundation bridge): with `hostServesMainQueue`, the pass leaves the queue to the host
    /// and stops watching its eventfd, so its posts wake the host alone and never cost the loop an empty pass. Runs
    /// of the loop's own nested in the pass serve the queue as usual. Loop thread only.
    @discardableResult
    package func runPass(in mode: Mode, hostServesMainQueue: Bool) -> Bool {
        runHostPass(in: mode, hostServesMainQueue: hostServesMainQueue, caller: "runPass(in:)")
        // A mode not named yet comes into being, so items added to it later wake the host.
        if announceSleep(in: self.mode(named: mode), evenIfEmpty: true) && armTimer(until: .max)
            && !isStillReadyAfterReports()
        {
            return false
        }
        poller.finishWaiting()
        return true
    }

    /// ``runPass(in:hostServesMainQueue:)`` for a host that times the loop's timers with a timer of its own (the
    /// Foundation bridge, whose CF timer makes the loop's timers count as timers in Foundation's terms): the pass
    /// leaves the loop's timerfd disarmed, so a timer coming due never makes ``pollDescriptor`` readable, and answers
    /// when the host must run the next pass for the timers. Loop thread only.
    ///
    /// - Returns: `nil` when work other than a timer is ready already (call again before waiting); else the
    ///   monotonic time in nanoseconds of the loop's next timer or callback (the latest fire time its tolerance
    ///   allows, as the loop's own sleep uses), `Int64.max` when there is none. Other threads' work and ready
    ///   descriptors make ``pollDescriptor`` readable as after ``runPass(in:)``.
    package func runHostTimedPass(in mode: Mode, hostServesMainQueue: Bool) -> Int64? {
        runHostPass(in: mode, hostServesMainQueue: hostServesMainQueue, caller: "runPass(in:)")
        if announceSleep(in: self.mode(named: mode), evenIfEmpty: true) && !isStillReadyAfterReports() {
            poller.disarm()  // A run of the loop's own may have armed it; the host's timer stands in for it.
            return timerTable.firstLatestFireTime ?? .max
        }
        poller.finishWaiting()
        return nil
    }

    /// The pass of ``runPass(in:hostServesMainQueue:)`` and ``runHostTimedPass(in:hostServesMainQueue:)``, before
    /// the loop is readied for the host's wait.
    private func runHostPass(in mode: Mode, hostServesMainQueue: Bool, caller: StaticString) {
        preconditionOnLoopThread(caller)
        require(
            mode != .common,
            "RunLoopKit: runPass(in: .common) runs nothing: .common names the set of common modes, not a mode to run; "
                + "pass .default or another mode")
        if poller.isWaiting.load(ordering: .relaxed) {
            // The host's wait is over: end it as a return from epoll_wait would. An eventfd write is still queued in
            // the epoll set (edge-triggered), so the pass's own epoll_wait reports it.
            poller.finishWaiting()
        }
        descriptorTable.reportedSinceHostPass = false
        let outerHostServedDepth = mainQueue.hostServedDepth
        if hostServesMainQueue && isMain {
            detachMainQueue()
            mainQueue.hostServedDepth = runStack.depth + 1  // The depth the pass runs at.
        }
        _ = run(
            mode: mode, deadline: .min, pollOnce: true, returnAfterSourceHandled: false, hostPass: true)
        mainQueue.hostServedDepth = outerHostServedDepth
    }

    /// For a host that serves Dispatch's main queue itself (CF's run loop on the main thread) and starts a run of its
    /// own in a handler of the main loop's (a `RunLoop.run` nested in a block): stops watching the main queue's
    /// eventfd at once, so that work queued before the host's run began wakes the host alone, which serves it, instead
    /// of making ``pollDescriptor`` readable (a pass of the loop's, which would leave it to the host anyway). The
    /// loop's run further out watches the eventfd again before it sleeps. Loop thread only; nothing on other loops.
    package func leaveMainQueueToHost() {
        preconditionOnLoopThread("leaveMainQueueToHost()")
        if isMain { detachMainQueue() }
    }

    /// A bridge's call for work made on the loop's thread between two host passes (``setHostWorkHandler(by:_:)``).
    package struct HostWorkHandler {
        let owner: ObjectIdentifier
        let call: @Sendable () -> Void
    }

    /// Makes `call` the way the host learns of work made on the loop's own thread while the loop counts as asleep
    /// for it (between two host passes: a block posted, a timer added or moved, a callback scheduled): code of the
    /// host's that runs there, which no eventfd write is needed to reach. Without a handler such work makes
    /// ``pollDescriptor`` readable, as other threads' work does, when no run of the loop's own is in progress; a
    /// bridge whose host counts every readiness of that descriptor as a handled source (CF's run loop) asks for a pass
    /// its own way instead. `call` runs on the loop's thread, inside the call that made the work, also inside a
    /// handler of a run of the loop's own after a host pass nested in it (the bridge knows whether its host's run is
    /// in progress there; if not, that run serves the work itself), and must not run the loop. One handler per loop;
    /// any thread (it takes effect before the loop's next pass).
    package func setHostWorkHandler(by owner: AnyObject, _ call: @escaping @Sendable () -> Void) {
        let handler = HostWorkHandler(owner: ObjectIdentifier(owner), call: call)
        onLoopThread { [self] in runStack.hostWorkHandler = handler }
    }

    /// Ends ``setHostWorkHandler(by:_:)`` for `owner`. Any thread.
    package func removeHostWorkHandler(by owner: AnyObject) {
        let owner = ObjectIdentifier(owner)
        onLoopThread { [self] in
            if runStack.hostWorkHandler?.owner == owner { runStack.hostWorkHandler = nil }
        }
    }

    /// Work was made on the loop's thread: if the loop counts as asleep for a host (a host pass left it so; only
    /// after a host pass does code run on the loop's thread while it does), the host must learn of it, or it would
    /// wait for an unrelated wake-up. One relaxed load otherwise. Loop thread only.
    @inline(__always)
    func noteLocalWork() {
        if poller.isWaiting.load(ordering: .relaxed) { tellHostOfLocalWork() }
    }

    @inline(never)
    private func tellHostOfLocalWork() {
        if let handler = runStack.hostWorkHandler {
            handler.call()
        } else if runStack.depth == 0 {
            // Inside a run of the loop's own, a host pass nested in one of its handlers left the loop counted as
            // asleep: that run serves the work before it sleeps, and an eventfd write would only wake it once more
            // (a loop that drives the GLib context it is attached to would never stop).
            poller.wakeIfSleeping()
        }
    }

    /// Whether the epoll set is still readable after a pass whose wait reported descriptor sources: a handler that
    /// read part of what was ready leaves its level-triggered entry ready, which a host waiting edge-triggered on
    /// ``pollDescriptor`` (CF's run loop adds its ports so) would never be told of again. A `poll(2)` only after such
    /// a pass; wake-ups, timers and Dispatch's main queue are edge-triggered and need none. Loop thread only.
    private func isStillReadyAfterReports() -> Bool {
        guard descriptorTable.reportedSinceHostPass else { return false }
        do {
            return try Poll.isReadable(poller.epoll)
        } catch {
            trap("RunLoopKit: cannot poll the loop's own epoll set: \(error)")
        }
    }

    /// A bridge's call at the entry and the exit of a run of the loop's own.
    package struct OwnRunWatcher {
        let owner: ObjectIdentifier
        let call: (_ entering: Bool, _ depth: Int) -> Void
    }

    /// Calls `call` at the entry (`true`) and the exit (`false`) of every run of the loop that is not a host's pass
    /// (``runPass(in:)``), with the run's ``runDepth``: a run nested in a host's callback, during which the host's
    /// own loop cannot turn (GLib's attachment iterates GLib's context in it). Entry is told after the entry
    /// observers, exit before the exit observers. Host passes pay nothing for it. Loop thread only.
    package func watchOwnRuns(by owner: AnyObject, _ call: @escaping (_ entering: Bool, _ depth: Int) -> Void) {
        preconditionOnLoopThread("watchOwnRuns(by:_:)")
        runStack.ownRunWatchers.append(OwnRunWatcher(owner: ObjectIdentifier(owner), call: call))
    }

    /// Ends ``watchOwnRuns(by:_:)`` for `owner`. Loop thread only.
    package func stopWatchingOwnRuns(by owner: AnyObject) {
        preconditionOnLoopThread("stopWatchingOwnRuns(by:)")
        runStack.ownRunWatchers.removeAll { $0.owner == ObjectIdentifier(owner) }
    }

    /// Tells the watchers of ``watchOwnRuns(by:_:)`` that a run of the loop's own starts or ends.
    func announceOwnRun(entering: Bool) {
        let depth = runStack.depth
        for watcher in runStack.ownRunWatchers { watcher.call(entering, depth) }  // A copy: a call may change the list.
    }

    /// How many runs of this loop are in progress on its thread (0 outside any run; a nested run adds one). Loop
    /// thread only; for bridges that must tell a run they started from one nested in it.
    package var runDepth: Int { runStack.depth }
}
