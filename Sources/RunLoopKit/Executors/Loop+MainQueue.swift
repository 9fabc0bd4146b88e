import RunLoopKitSystem
import Synchronization

/// The main loop's service of Dispatch's main queue, as CF's main run loop does it.
///
/// While the main thread runs ``Loop/main`` in one of its common modes, work submitted to `DispatchQueue.main`
/// (and so `@MainActor` work, which Swift on Linux sends there) runs in the loop's passes. libdispatch writes an
/// eventfd of its own when the main queue gains work; the main loop watches it in its epoll set (edge-triggered,
/// so a report that comes while the queue cannot be served does not spin), and at step 9 of a pass reads it and
/// drains the queue.
///
/// Loop thread only (the main thread).
struct MainQueueService {
    /// libdispatch's eventfd, once the main loop watches it.
    var descriptor: CInt?
    /// The eventfd reported work that has not been drained yet.
    var hasWork = false
    /// A drain is running: nested runs inside main-queue work do not drain again (as in CF).
    var isDraining = false
    /// The run depth of a host pass whose host serves the main queue itself (``Loop/runPass(in:hostServesMainQueue:)``),
    /// `-1` when there is none (depths start at 0, outside any run): that pass leaves the queue to the host; runs
    /// nested in it serve it as usual.
    var hostServedDepth = -1
}

extension Loop {
    /// Whether this loop drains Dispatch's main queue (`DispatchQueue.main`, and with it `@MainActor` work) while it
    /// runs in one of its common modes. Safe from any thread.
    ///
    /// Only the main loop can: for other loops this is always `false` and setting it does nothing. It is `true` by
    /// default, as for CF's main run loop, except in the child of a `fork()`, where libdispatch must not be used:
    /// there it is `false` and stays so. Set it to `false` to make the main loop ignore the main queue (its work then
    /// waits until it is set again). Whether serving the queue also keeps runs going is
    /// ``mainQueueKeepsRunAlive``.
    public var servesMainQueue: Bool {
        get { isMain && control.servesMainQueue.load(ordering: .relaxed) }
        set {
            guard isMain, poller.forkGeneration == 0 else { return }
            control.servesMainQueue.store(newValue, ordering: .relaxed)
            wakeUp()  // A sleeping run re-reads the setting and its emptiness.
        }
    }

    /// Whether serving Dispatch's main queue keeps the main loop's runs going when nothing else does. Safe from any
    /// thread; default `true` (CF's rule). Meaningful only while ``servesMainQueue`` holds.
    ///
    /// `true`: a common mode of the main loop is never empty, so ``run()`` on the main thread returns only when
    /// stopped, as `CFRunLoopRun()` there never finishes. An app needs this: a `Task { @MainActor in … }` awaiting a
    /// reply from another thread has nothing queued anywhere while it waits, and the run must not end under it.
    ///
    /// `false`, for a script or a daemon whose work is all in the loop's items: the main queue is served like an
    /// item whose `keepsRunAlive` is `false` (libuv's `uv_unref`): its work runs in every pass, and a run still goes
    /// on while main-queue work is queued, but once the mode holds nothing else that keeps it alive, the run answers
    /// ``RunResult/finished``. Work queued after that waits for the next run. A task suspended in an `await` is not
    /// queued work: end such a program with ``stop()`` instead.
    public var mainQueueKeepsRunAlive: Bool {
        get { control.mainQueueKeepsRunAlive.load(ordering: .relaxed) }
        set {
            control.mainQueueKeepsRunAlive.store(newValue, ordering: .relaxed)
            wakeUp()  // A sleeping run re-checks whether it is empty now.
        }
    }

    /// Whether a run in `state` serves the main queue now: main loop, enabled, common mode, not inside a drain.
    /// Loop thread only.
    @inline(__always)
    func servesMainQueue(in state: ModeState) -> Bool {
        isMain && state.isCommon && !mainQueue.isDraining && mainQueue.hostServedDepth != runStack.depth
            && control.servesMainQueue.load(ordering: .relaxed)
    }

    /// Stops watching Dispatch's main-queue eventfd, for a host that serves the main queue itself: its posts then
    /// wake only the host. A run of the loop's own that serves the queue watches it again from its entry. Loop thread
    /// only.
    func detachMainQueue() {
        guard let descriptor = mainQueue.descriptor else { return }
        poller.unregister(descriptor)
        mainQueue.descriptor = nil
        mainQueue.hasWork = false  // The host's to serve.
    }

    /// Puts libdispatch's main-queue eventfd in the epoll set, the first time a run serves the main queue (at its
    /// entry, or the pass after ``servesMainQueue`` was turned on). Loop thread only.
    func attachMainQueue() {
        guard mainQueue.descriptor == nil else { return }
        let descriptor = DispatchMainQueue.wakeUpDescriptor()
        do {
            try poller.register(descriptor, events: [.input, .edgeTriggered], tag: Poller.mainQueueTag)
        } catch {
            trap("RunLoopKit: cannot watch Dispatch's main-queue eventfd \(descriptor): \(error)")
        }
        mainQueue.descriptor = descriptor
        // Work queued before: the eventfd is readable already, and adding it to the set reports it at once.
    }

    /// Whether main-queue work is queued for a run in `state` that serves the main queue without being kept alive
    /// by it: work reported and not drained yet, or libdispatch's eventfd readable now (work queued before the run
    /// looked, or left over by a drain). Loop thread only; a `poll(2)` only when the mode is otherwise empty.
    func hasQueuedMainQueueWork(in state: ModeState) -> Bool {
        guard servesMainQueue(in: state) else { return false }
        if mainQueue.hasWork { return true }
        attachMainQueue()
        guard let descriptor = mainQueue.descriptor else { return false }
        do {
            return try Poll.isReadable(descriptor)
        } catch {
            trap("RunLoopKit: cannot poll Dispatch's main-queue eventfd \(descriptor): \(error)")
        }
    }

    /// Step 9c: drains the main queue if it reported work and this run serves it; answers whether it did (which
    /// counts as a handled source, as in CF). Loop thread only.
    @inline(__always)
    func serviceMainQueue(in state: ModeState) -> Bool {
        // Inline, so a pass of any other loop than the main one pays a load and a test, not a call.
        guard servesMainQueue(in: state) else { return false }
        return drainMainQueue()
    }

    /// ``serviceMainQueue(in:)`` on a run that serves the main queue.
    private func drainMainQueue() -> Bool {
        guard mainQueue.hasWork, let descriptor = mainQueue.descriptor else {
            attachMainQueue()  // Opted in during this run (``servesMainQueue`` woke it): watch from now on.
            return false
        }
        mainQueue.hasWork = false
        // Read before draining: work queued during the drain writes the eventfd again and is seen next pass. Found
        // already read, the queue was served by someone else on this thread since it reported (a host that serves it,
        // such as CF's run loop, or a drain this run is nested in): nothing is left to drain.
        guard (try? EventFD.drain(descriptor)) == true else { return false }
        mainQueue.isDraining = true
        MetricsKeeper.bump(metricsKeeper.mainQueueDrains)
        recordSinceEventsReturned(.mainQueue)
        let token = recordCalloutStart(.mainQueue, at: .unknown)
        DispatchMainQueue.drain()
        recordCalloutEnd(token)
        mainQueue.isDraining = false
        return true
    }
}
