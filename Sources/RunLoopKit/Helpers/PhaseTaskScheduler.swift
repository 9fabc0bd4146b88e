import RunLoopKitSystem
import Synchronization

/// Runs closures at a chosen phase of a loop's pass, in chosen modes: at the end of the current pass (before the
/// loop sleeps), when the next pass begins (after it wakes), or when it goes idle.
///
/// The Linux counterpart of the run-loop task dispatcher built on one `CFRunLoopObserver` on Apple platforms
/// (`perform { }.when(.currentLoopEnded).forModes(...)`): UI code uses it to apply batched changes at the end of
/// the current event-loop turn instead of the start of the next one. One observer per scheduler watches
/// ``Loop/Activity/afterWaiting``, ``Loop/Activity/beforeWaiting`` and ``Loop/Activity/exit`` in every common mode
/// and in every other mode a task names; tasks run inside that observer's callout. See ``LoopPhase`` for exactly
/// when each phase comes.
///
/// Phase tasks never keep a mode running (an observer alone leaves a mode empty): the loop must run the mode for
/// other reasons (sources, timers, descriptor sources, blocks). A task waits, without limit, for a run of one of
/// its modes; each task runs exactly once. Tasks of one phase run in the order they were scheduled.
///
/// Threading: ``schedule(at:in:_:)`` is safe from any thread; from another thread it wakes the loop so the task
/// does not wait for the next natural wake-up. Tasks run on the loop's thread. Keep the scheduler alive while it
/// has work: releasing it (or ``invalidate()``) removes its observer, and tasks still pending then never run.
/// One scheduler per loop is the intended use; several work independently (each with its own observer).
public final class PhaseTaskScheduler: Sendable {
    /// The default observer order: after the loop's observers of lower order for the same activity, and before
    /// ``PassWorkQueue/defaultOrder`` and ``CommitBeforeSleep/defaultOrder`` (CF's Core Animation commit observer
    /// uses 2,000,000).
    public static var defaultOrder: Int { 1_000_000 }

    /// The loop whose passes the tasks are tied to.
    public let loop: Loop
    /// The order of the scheduler's observer among the loop's observers of the same activity (lower first).
    public let order: Int

    private let queue = Queue()
    private let observer: LoopObserver
    /// Modes the observer was added to by name, beyond the common modes. Protected by the mutex.
    private let observedModes = Locked<Set<Loop.Mode>>([.common])

    /// Creates a scheduler for `loop`, adding its observer to the loop's common modes.
    ///
    /// - Parameters:
    ///   - loop: The loop whose passes the tasks are tied to; any thread may create the scheduler.
    ///   - order: The observer's order. Default ``defaultOrder``.
    /// - Throws: ``LoopError/Code/loopTerminated`` when the loop's thread has exited.
    public init(loop: Loop, order: Int = PhaseTaskScheduler.defaultOrder) throws(LoopError) {
        self.loop = loop
        self.order = order
        let queue = self.queue
        observer = LoopObserver(activities: [.afterWaiting, .beforeWaiting, .exit], order: order) { _, activity in
            queue.handle(activity, on: Loop.current)
        }
        try loop.add(observer, to: .common)
    }

    deinit {
        observer.invalidate()
    }

    /// Schedules `task` to run once on the loop's thread at `phase` of a pass in one of `modes`.
    ///
    /// Safe from any thread. Called from another thread it wakes the loop; called on the loop's thread during a
    /// pass, a ``LoopPhase/currentPassEnds`` task runs when that pass ends, and a ``LoopPhase/nextPassBegins``
    /// task when the loop next wakes (the scheduler makes the loop go round once more rather than sleep with a
    /// task of its running mode pending).
    /// - Parameters:
    ///   - phase: When in the pass to run it.
    ///   - modes: The modes whose passes may run it; ``Loop/Mode/common`` (the default) stands for every common
    ///     mode. An empty list matches no pass, so the task is dropped at once rather than kept, never to run.
    ///   - task: The closure; it runs on the loop's thread, inside the scheduler's observer callout.
    /// - Returns: `false` when `modes` is empty, the scheduler was invalidated or the loop's thread has exited, and
    ///   the task was dropped. (A task scheduled while the scheduler is invalidated or the thread exits may be
    ///   dropped with them.)
    @discardableResult
    public func schedule(
        at phase: LoopPhase,
        in modes: [Loop.Mode] = [.common],
        _ task: @escaping @Sendable () -> Void
    ) -> Bool {
        guard !modes.isEmpty, observer.isValid, !loop.isTerminated else { return false }
        let newModes = observedModes.withLock { observed in modes.filter { observed.insert($0).inserted } }
        for mode in newModes {
            try? loop.add(observer, to: mode)  // Fails only for a terminated loop, where no task can run anyway.
        }
        queue.append(PendingTask(phase: phase, modes: modes, body: task))
        // Invalidated meanwhile: the task must not be left behind (invalidate may have emptied the queue first).
        if !observer.isValid { queue.removeAll() }
        if !loop.isCurrent { loop.wakeUp() }
        return true
    }

    /// Removes the scheduler's observer from the loop and drops the tasks still pending; they never run. Safe from
    /// any thread.
    public func invalidate() {
        observer.invalidate()
        queue.removeAll()
    }
}
