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
}

extension Loop {
    /// Whether this loop drains Dispatch's main queue (`DispatchQueue.main`, and with it `@MainActor` work) while it
    /// runs in one of its common modes. Safe from any thread.
    ///
    /// Only the main loop can: for other loops this is always `false` and setting it does nothing. It is `true` by
    /// default, as for CF's main run loop, except in the child of a `fork()`, where libdispatch must not be used:
    /// there it is `false` and stays so. While it holds, a common mode of the main loop is never empty, so
    /// ``run()`` on the main thread returns only when stopped (CF's rule: `CFRunLoopRun()` on the main thread never
    /// finishes); end such a program with ``stop()`` from any thread, or `exit(_:)`. Set it to `false` to make the
    /// main loop ignore the main queue: its runs then finish when their mode is empty, like any loop's.
    public var servesMainQueue: Bool {
        get { isMain && mainQueueEnabled.load(ordering: .relaxed) }
        set {
            guard isMain, poller.forkGeneration == 0 else { return }
            mainQueueEnabled.store(newValue, ordering: .relaxed)
            wakeUp()  // A sleeping run re-reads the setting and its emptiness.
        }
    }

    /// Whether a run in `state` serves the main queue now: main loop, enabled, common mode, not inside a drain.
    /// Loop thread only.
    @inline(__always)
    func servesMainQueue(in state: ModeState) -> Bool {
        isMain && state.isCommon && !mainQueue.isDraining && mainQueueEnabled.load(ordering: .relaxed)
    }

    /// Puts libdispatch's main-queue eventfd in the epoll set, the first time a run serves the main queue (at its
    /// entry, or the pass after ``servesMainQueue`` was turned on). Loop thread only.
    func attachMainQueue() {
        guard mainQueue.descriptor == nil else { return }
        let descriptor = DispatchMainQueue.wakeUpDescriptor()
        do {
            try poller.register(descriptor, events: [.input, .edgeTriggered], tag: Poller.mainQueueTag)
        } catch {
            fatalError("RunLoopKit: cannot watch Dispatch's main-queue eventfd \(descriptor): \(error)")
        }
        mainQueue.descriptor = descriptor
        // Work queued before: the eventfd is readable already, and adding it to the set reports it at once.
    }

    /// Step 9c: drains the main queue if it reported work and this run serves it; answers whether it did (which
    /// counts as a handled source, as in CF). Loop thread only.
    func serviceMainQueue(in state: ModeState) -> Bool {
        guard servesMainQueue(in: state) else { return false }
        guard mainQueue.hasWork, let descriptor = mainQueue.descriptor else {
            attachMainQueue()  // Opted in during this run (``servesMainQueue`` woke it): watch from now on.
            return false
        }
        mainQueue.hasWork = false
        // Read before draining: work queued during the drain writes the eventfd again and is seen next pass.
        try? EventFD.drain(descriptor)
        mainQueue.isDraining = true
        DispatchMainQueue.drain()
        mainQueue.isDraining = false
        return true
    }
}
