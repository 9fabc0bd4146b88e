import RunLoopKitSystem
import Synchronization

/// Updates marked during a pass, coalesced and committed once just before the loop sleeps, and when a run
/// exits: the Core Animation and Texture pattern.
///
/// Core Animation collects the layers changed during a pass and commits them in one transaction from an
/// observer of beforeWaiting and exit; Texture does the same for its nodes with an observer of the same
/// activities and a later order, so its commit sees everything Core Animation and the app did first. Here,
/// ``mark(_:)`` records an update from any thread, and an observer of beforeWaiting and exit in ``modes`` calls
/// the commit handler once with every update marked since the last commit, in marking order. Observers of
/// lower ``order`` run before the commit, so what they mark is included.
///
/// Updates marked during the commit go to the next commit, and the loop goes round once more instead of
/// sleeping so that commit comes promptly. A mark from another thread hops to the loop: it wakes the loop (and
/// keeps a run in one of ``modes`` from returning ``Loop/RunResult/finished`` before the commit).
///
/// Threading: every member is safe from any thread; the commit handler runs on the loop's thread. The helper
/// works while you hold a reference to it; releasing the last reference invalidates it and drops what is
/// pending.
public final class CommitBeforeSleep<Update: Sendable>: Sendable {
    /// The default observer order: late, after most observers (Core Animation's is 2,000,000; Texture's later).
    public static var defaultOrder: Int { Int.max - 1000 }

    /// The loop whose passes commit the updates.
    public let loop: Loop
    /// The modes whose beforeWaiting and exit commit.
    public let modes: [Loop.Mode]
    /// The order of the commit observer: observers of lower order run first.
    public let order: Int

    private let commitHandler: @Sendable ([Update]) -> Void
    private let state = Locked(State())

    /// Creates a committer on `loop`, observing beforeWaiting and exit in `modes`.
    ///
    /// - Parameters:
    ///   - loop: The loop whose thread commits.
    ///   - modes: The modes whose passes commit (default: every common mode). Not empty.
    ///   - order: The commit observer's order. Default ``defaultOrder``.
    ///   - commit: Called on the loop's thread with the updates marked since the last commit, oldest first,
    ///     never with an empty array.
    /// - Throws: ``LoopError/Code/invalidArgument`` for an empty `modes`; ``LoopError/Code/loopTerminated``
    ///   if the loop's thread has exited.
    /// - Warning: `commit` runs on the loop's thread; keep it short, or the loop is late for everything else.
    public init(
        loop: Loop,
        modes: [Loop.Mode] = [.common],
        order: Int = CommitBeforeSleep.defaultOrder,
        commit: @escaping @Sendable ([Update]) -> Void
    ) throws(LoopError) {
        guard !modes.isEmpty else {
            throw LoopError(.invalidArgument, message: "a commit-before-sleep helper needs at least one mode")
        }
        self.loop = loop
        self.modes = modes
        self.order = order
        self.commitHandler = commit
        let observer = try loop.addHelperObserver(activities: [.beforeWaiting, .exit], order: order, to: modes) {
            [weak self] _, _ in self?.commit()
        }
        state.withLock { $0.observer = observer }
    }

    deinit {
        invalidate()
    }

    /// Records `update` for the next commit. Safe from any thread.
    ///
    /// On the loop's thread the update is committed at the current pass's beforeWaiting (or its run's exit).
    /// From another thread the loop is woken and the update committed at the end of its next pass in one of
    /// ``modes``.
    /// - Parameter update: The update; commits receive updates in the order they were marked.
    /// - Returns: `false` if the helper was invalidated or its loop's thread has exited, so the update will never
    ///   be committed and was dropped. (An update marked while the thread is exiting may be dropped with it.)
    @discardableResult
    public func mark(_ update: Update) -> Bool {
        guard !loop.isTerminated else { return false }
        let onLoopThread = loop.isCurrent
        let (accepted, hop) = state.withLock { state -> (Bool, Bool) in
            guard !state.isInvalidated else { return (false, false) }
            state.pending.append(update)
            guard !onLoopThread, !state.isHopPosted else { return (true, false) }
            state.isHopPosted = true
            return (true, true)
        }
        // The block wakes the loop and keeps the mode from finishing before the commit; once it has run, the
        // wake-up makes sure the pass reaches its beforeWaiting and does not sleep with nothing else to wait for.
        if hop { loop.perform(in: modes) { [loop] in loop.wakeUp() } }
        return accepted
    }

    /// The number of updates marked and not yet committed. Safe from any thread; may be stale at once.
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Whether the helper still records and commits updates. Safe from any thread.
    public var isValid: Bool { state.withLock { !$0.isInvalidated } }

    /// Drops the pending updates and detaches the helper from its loop for good. Safe from any thread.
    ///
    /// A commit already running finishes; no other starts. Idempotent.
    public func invalidate() {
        let observer = state.withLock { state -> LoopObserver? in
            state.isInvalidated = true
            state.pending.removeAll()
            defer { state.observer = nil }
            return state.observer
        }
        observer?.invalidate()
    }

    // MARK: Loop thread

    /// The observer's work: hand everything pending to the commit handler, once.
    private func commit() {
        let batch = state.withLock { state -> [Update] in
            state.isHopPosted = false
            var batch: [Update] = []
            swap(&batch, &state.pending)
            return batch
        }
        guard !batch.isEmpty else { return }
        commitHandler(batch)
        // Marked during the commit: go round once more rather than sleep, so the next commit is prompt.
        if state.withLock({ !$0.pending.isEmpty }) { loop.wakeUp() }
    }

    /// What the helper's mutex protects.
    private struct State {
        /// Updates marked since the last commit, oldest first.
        var pending: [Update] = []
        /// Whether a block from another thread's mark is on its way to the loop.
        var isHopPosted = false
        /// Set once by `invalidate()`.
        var isInvalidated = false
        /// The commit observer; `nil` once invalidated.
        var observer: LoopObserver?
    }
}
