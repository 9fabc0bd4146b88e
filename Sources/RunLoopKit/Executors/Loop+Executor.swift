import RunLoopKitSystem

/// A loop as the serial executor of actors: their jobs run on the loop's thread, at the block points of its passes.
///
/// Threading: ``enqueue(_:)`` is called by the concurrency runtime from any thread; jobs run on the loop's thread
/// only, one at a time, in the order they were enqueued (per enqueuing thread), interleaved with
/// ``perform(in:_:file:line:)-(Mode,_,_,_)`` blocks in the same order. ``checkIsolated()`` and ``isIsolatingCurrentContext()``
/// may be called from any thread.
///
/// An actor on a loop keeps the loop alive only if it stores it (or the ``LoopThread`` that owns it): an
/// `UnownedSerialExecutor` does not retain the loop.
extension Loop: SerialExecutor {
    /// Queues an actor's job to run once on the loop's thread, at the next block point of a pass in one of the
    /// loop's common modes (the block points of <doc:PassOrder>), in order with blocks. Called by the
    /// concurrency runtime, from any thread.
    ///
    /// Allocates nothing beyond the runtime's job; from another thread it costs a short lock and, only if the loop
    /// sleeps, one eventfd write. A job that arrives after the loop's thread exited (``isTerminated``) traps: it can
    /// never run on the actor's thread, and must not run on another (a programming error: keep the thread, e.g. its
    /// ``LoopThread``, alive while its actors are used). So does a job enqueued, in the child of a `fork()`, on a
    /// loop created before the fork. Use ``executor(in:)`` to choose other modes.
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueueJob(UnownedJob(job), in: .commonModes, on: nil, for: nil)
    }

    /// The loop as an actor's executor: return it from the actor's `unownedExecutor`. Safe from any thread.
    ///
    /// It does not retain the loop: the actor must keep a strong reference to the loop (or its ``LoopThread``).
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Traps unless called on the loop's thread, naming the loop's thread and the calling one. Safe from any thread.
    ///
    /// The runtime calls it for `assumeIsolated` and `preconditionIsolated` of an actor on this loop when it cannot
    /// tell from the running job (say, in a ``perform(in:_:file:line:)-(Mode,_,_,_)`` block): on the loop's thread they pass.
    public func checkIsolated() {
        preconditionIsolatedToLoopThread()
    }

    /// Whether the calling thread is the loop's thread, which is where this executor's actors are isolated. Safe
    /// from any thread.
    public func isIsolatingCurrentContext() -> Bool? {
        isCurrent
    }
}

extension Loop {
    /// Queues `job` as a block for `modes`, to run on `executor` (a ``LoopExecutor`` of this loop, or `nil` for the
    /// loop itself), for `taskExecutor` (a preferring task's job) or for an actor (`nil`); traps if the loop's thread
    /// has exited. Any thread.
    @inline(__always)
    func enqueueJob(
        _ job: UnownedJob, in modes: BlockModes, on executor: LoopExecutor?, for taskExecutor: LoopTaskExecutor?
    ) {
        let job = QueuedJob(job: job, executor: executor, taskExecutor: taskExecutor)
        let block = PendingBlock(modes: modes, job: job)
        let stamp = handOverStamp()
        if isCurrent {
            blocks.append(block, pool: inbox.segments)
            if stamp != 0 { blocks.stampLast(stamp) }
            return
        }
        guard !isTerminated else { trapJobForExitedThread() }  // A parent's loop in a fork() child included.
        switch inbox.post(block, isClosureBlock: false, stamp: stamp) {
        case .refused: trapJobForExitedThread()
        case .queuedFirst: poller.wakeIfSleeping()
        case .queuedBehind: break  // The post that found the inbox empty wakes the loop for the whole batch.
        }
    }

    /// Traps for a job enqueued after the loop's thread exited (or, in a `fork()` child, on a loop created before
    /// the fork: as for a loop whose thread exited, no thread of this process will ever run it).
    func trapJobForExitedThread() -> Never {
        if createdBeforeFork {
            trap(
                "RunLoopKit: an actor job was enqueued on \(loopDescriptionForTraps) in a child of fork(): "
                    + ForkGuard.message)
        }
        trap(
            "RunLoopKit: an actor job was enqueued on \(loopDescriptionForTraps), whose thread has exited: the "
                + "actor's loop thread is gone and the job must not run on another thread (a programming error: keep "
                + "the thread, e.g. its LoopThread, alive while its actors are used; called from thread "
                + "\(ThreadIdentity.currentThreadID()))")
    }

    /// Traps unless the caller is on the loop's thread; the message names both threads. Any thread.
    func preconditionIsolatedToLoopThread() {
        guard !isCurrent else { return }
        let caller = ThreadIdentity.describe(ThreadIdentity.currentThreadID())
        trap(
            createdBeforeFork
                ? ForkGuard.message
                : "RunLoopKit: code isolated to an actor on \(loopDescriptionForTraps) ran on \(caller), not on the "
                    + "loop's own thread (checkIsolated())")
    }
}
