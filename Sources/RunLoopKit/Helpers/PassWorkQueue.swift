import RunLoopKitSystem
import Synchronization

/// Heavy work spread over a loop's passes: a queue of tasks that runs at most ``tasksPerPass`` of them (or at
/// most ``timeBudget`` worth) each time the loop is about to sleep, so events are handled between batches.
///
/// This is the pattern of "adding one image per run-loop pass": instead of doing a thousand pieces of work in
/// one callout and freezing the loop, queue them here. At every beforeWaiting of a pass in one of ``modes``,
/// the queue runs the next batch; if tasks remain it wakes the loop so it goes round again at once instead of
/// sleeping, and the sources, timers, descriptor sources and blocks that arrived meanwhile are handled before
/// the next batch. An empty queue costs nothing: the loop sleeps as usual.
///
/// While tasks are pending the queue keeps a private, never-signalled ``LoopSource`` in its modes, so a run
/// does not return ``Loop/RunResult/finished`` with work left; when the queue drains the source is removed and
/// the mode may finish. The queue is built on the loop's public API only.
///
/// Threading: every member is safe from any thread. Tasks run on the loop's thread, one at a time, in the
/// order they were queued. The queue works while you hold a reference to it; releasing the last reference
/// invalidates it and drops the pending tasks.
public final class PassWorkQueue: Sendable {
    /// The default observer order: before ``CommitBeforeSleep``'s default, so that updates marked by a task are
    /// committed at the end of the same pass.
    public static var defaultOrder: Int { Int.max - 2000 }

    /// The loop whose passes run the tasks.
    public let loop: Loop
    /// The largest number of tasks run in one pass.
    public let tasksPerPass: Int
    /// The longest time spent on tasks in one pass (at least one task runs), or `nil` for no time limit.
    public let timeBudget: Duration?
    /// The modes whose passes run the tasks.
    public let modes: [Loop.Mode]
    /// The order of the queue's beforeWaiting observer: observers of lower order run before the batch.
    public let order: Int

    /// Keeps the modes from being empty while tasks are pending; never signalled.
    private let keepAlive = LoopSource(perform: { _ in })
    private let state = Locked(State())

    /// Creates a queue for `loop`'s passes in `modes`.
    ///
    /// Both limits apply, whichever is reached first: with a time budget and no count limit in mind, pass
    /// `tasksPerPass: .max`. At least one task runs per pass whatever the budget.
    /// - Parameters:
    ///   - loop: The loop whose thread runs the tasks.
    ///   - tasksPerPass: The largest number of tasks run in one pass; at least 1.
    ///   - timeBudget: If set, no further task starts in a pass once this much time was spent; above zero.
    ///   - modes: The modes whose passes run tasks (default: every common mode). Not empty.
    ///   - order: The order of the queue's beforeWaiting observer. Default ``defaultOrder``.
    /// - Throws: ``LoopError/Code/invalidArgument`` for a limit out of range or no modes;
    ///   ``LoopError/Code/loopTerminated`` if the loop's thread has exited.
    public init(
        loop: Loop,
        tasksPerPass: Int = 1,
        timeBudget: Duration? = nil,
        modes: [Loop.Mode] = [.common],
        order: Int = PassWorkQueue.defaultOrder
    ) throws(LoopError) {
        guard tasksPerPass >= 1 else {
            throw LoopError(.invalidArgument, message: "tasksPerPass must be at least 1, not \(tasksPerPass)")
        }
        if let timeBudget, timeBudget <= .zero {
            throw LoopError(.invalidArgument, message: "timeBudget must be above zero, not \(timeBudget)")
        }
        guard !modes.isEmpty else {
            throw LoopError(.invalidArgument, message: "a pass work queue needs at least one mode")
        }
        self.loop = loop
        self.tasksPerPass = tasksPerPass
        self.timeBudget = timeBudget
        self.modes = modes
        self.order = order
        let observer = try loop.addHelperObserver(activities: .beforeWaiting, order: order, to: modes) {
            [weak self] _, _ in self?.runBatch()
        }
        state.withLock { $0.observer = observer }
    }

    deinit {
        invalidate()
    }

    /// Queues `task` to run on the loop's thread in a later batch, after every task queued before it.
    ///
    /// Safe from any thread; wakes the loop if it sleeps. A task may queue more tasks.
    /// - Parameter task: The work; it runs once, at a beforeWaiting of a pass in one of ``modes``.
    /// - Returns: `false` if the queue was invalidated or its loop's thread has exited, so the task will never
    ///   run. (A task queued while the thread is exiting may be dropped with the loop.)
    @discardableResult
    public func enqueue(_ task: @escaping @Sendable () -> Void) -> Bool {
        guard !loop.isTerminated else { return false }
        let onLoopThread = loop.isCurrent
        let action = state.withLock { state -> EnqueueAction in
            guard !state.isInvalidated else { return .rejected }
            state.append(task)
            if state.isInstalled { return onLoopThread ? .nothing : .wake }
            if onLoopThread { return .apply(state.reconcile()) }
            if state.isInstallPosted { return .nothing }
            state.isInstallPosted = true
            return .postInstall
        }
        switch action {
        case .rejected:
            return false
        case .nothing:
            break
        case .wake:
            loop.wakeUp()
        case .apply(let change):
            apply(change)
        case .postInstall:
            // The block wakes the loop, keeps the mode alive until it runs, and installs the keep-alive source
            // on the loop's thread, where every install and uninstall happens (so they never race).
            loop.perform(in: modes) { [weak self] in self?.reconcileOnLoopThread() }
        }
        return true
    }

    /// The number of tasks queued and not yet started. Safe from any thread; may be stale at once.
    public var pendingCount: Int { state.withLock { $0.pendingCount } }

    /// Whether the queue still accepts and runs tasks. Safe from any thread.
    public var isValid: Bool { state.withLock { !$0.isInvalidated } }

    /// Drops every task not yet started; the queue stays usable. Safe from any thread.
    ///
    /// A task already running finishes. The keep-alive source leaves the modes at the loop's next pass in one of
    /// them (at once when called on the loop's thread).
    /// - Returns: The number of tasks dropped.
    @discardableResult
    public func cancelAll() -> Int {
        let dropped = state.withLock { $0.removeAll() }
        if loop.isCurrent {
            reconcileOnLoopThread()
        } else {
            loop.wakeUp()
        }
        return dropped
    }

    /// Drops the pending tasks and detaches the queue from its loop for good. Safe from any thread; idempotent.
    ///
    /// A task already running finishes; no other starts. Later ``enqueue(_:)`` calls return `false`.
    public func invalidate() {
        let (observer, wasInstalled) = state.withLock { state -> (LoopObserver?, Bool) in
            defer {
                state.isInvalidated = true
                _ = state.removeAll()
                state.isInstalled = false
                state.observer = nil
            }
            return (state.observer, state.isInstalled)
        }
        observer?.invalidate()
        keepAlive.invalidate()
        // Called by a task at beforeWaiting, the mode may have just become empty: go round once more rather than
        // sleep, so the run can end as `finished`.
        if wasInstalled { loop.wakeUp() }
    }

    // MARK: Loop thread

    /// The observer's work at beforeWaiting: one batch, then keep the loop awake if tasks remain.
    private func runBatch() {
        let start = timeBudget == nil ? nil : Loop.Instant.now
        var ran = 0
        while ran < tasksPerPass, let task = state.withLock({ $0.popFirst() }) {
            task()
            ran += 1
            if let start, let timeBudget, Loop.Instant.now - start >= timeBudget { break }
        }
        let (change, remaining) = state.withLock { ($0.reconcile(), $0.pendingCount) }
        apply(change)
        // Tasks remain: the loop must not sleep. Polling once lets whatever arrived be handled, then the next
        // pass's beforeWaiting runs the next batch.
        if remaining > 0 { loop.wakeUp() }
    }

    private func reconcileOnLoopThread() {
        let change = state.withLock { state in
            state.isInstallPosted = false
            return state.reconcile()
        }
        apply(change)
    }

    /// Adds or removes the keep-alive source. Loop thread only, so the change is immediate.
    private func apply(_ change: KeepAliveChange) {
        switch change {
        case .none:
            break
        case .install:
            for mode in modes {
                try? loop.add(keepAlive, to: mode)  // Fails only once the queue or its loop is gone.
            }
        case .uninstall:
            for mode in modes {
                loop.remove(keepAlive, from: mode)
            }
            // The mode may be empty now: go round once more (not sleep) so the run can end as `finished`.
            loop.wakeUp()
        }
    }

    private enum EnqueueAction {
        case rejected
        case nothing
        case wake
        case apply(KeepAliveChange)
        case postInstall
    }
}

extension PassWorkQueue.State {
    /// Decides whether the keep-alive source must join or leave the modes, and records the decision.
    mutating func reconcile() -> PassWorkQueue.KeepAliveChange {
        guard !isInvalidated else { return .none }
        if pendingCount > 0 && !isInstalled {
            isInstalled = true
            return .install
        }
        if pendingCount == 0 && isInstalled {
            isInstalled = false
            return .uninstall
        }
        return .none
    }
}
