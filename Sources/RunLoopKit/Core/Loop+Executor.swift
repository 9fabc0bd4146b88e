/// A loop as the serial executor of actors: their jobs run on the loop's thread, at the block points of its passes.
///
/// Threading: ``enqueue(_:)`` is called by the concurrency runtime from any thread; jobs run on the loop's thread
/// only, one at a time, in the order they were enqueued (per enqueuing thread), interleaved with
/// ``perform(in:_:)-(Mode,_)`` blocks in the same order. ``checkIsolated()`` and ``isIsolatingCurrentContext()``
/// may be called from any thread.
///
/// An actor on a loop keeps the loop alive only if it stores it (or the ``LoopThread`` that owns it): an
/// `UnownedSerialExecutor` does not retain the loop.
extension Loop: SerialExecutor {
    /// Queues an actor's job to run once on the loop's thread, at the next block point of a pass in one of the
    /// loop's common modes (steps 3, 5 and 10 of Docs/Iteration.md), in order with blocks. Called by the
    /// concurrency runtime, from any thread.
    ///
    /// Allocates nothing beyond the runtime's job; from another thread it costs a short lock and, only if the loop
    /// sleeps, one eventfd write. A job that arrives after the loop's thread exited (``isTerminated``) traps: it can
    /// never run on the actor's thread, and must not run on another (a programming error: keep the thread, e.g. its
    /// ``LoopThread``, alive while its actors are used). Use ``executor(in:)`` to choose other modes.
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueueJob(UnownedJob(job), in: .commonModes, on: asUnownedSerialExecutor())
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
    /// tell from the running job (say, in a ``perform(in:_:)-(Mode,_)`` block): on the loop's thread they pass.
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
    /// Queues `job` as a block for `modes`, to run on `executor` (this loop, or a ``LoopExecutor`` of it); traps if
    /// the loop's thread has exited. Any thread.
    @inline(__always)
    func enqueueJob(_ job: UnownedJob, in modes: BlockModes, on executor: UnownedSerialExecutor) {
        let block = PendingBlock(modes: modes, job: QueuedJob(job: job, executor: executor))
        if isCurrent {
            blocks.append(block, pool: inbox.segments)
            return
        }
        guard !isTerminated else { trapJobForExitedThread() }
        switch inbox.post(block, isClosureBlock: false) {
        case .refused: trapJobForExitedThread()
        case .queuedFirst: poller.wakeIfSleeping()
        case .queuedBehind: break  // The post that found the inbox empty wakes the loop for the whole batch.
        }
    }

    /// Whether `block` may run in a pass of `state`: its modes match, and it is not a job asked to run inside a
    /// job. Loop thread only.
    ///
    /// Jobs never nest, as CF never drains the main dispatch queue in a run nested inside a main-queue block: a job
    /// that runs the loop nested leaves the other jobs queued until it returns, so an actor's synchronous code is
    /// never entered again by another job of the same executor.
    @inline(__always)
    func canRun(_ block: PendingBlock, _ state: ModeState) -> Bool {
        matches(block.modes, state) && (block.job == nil || !runStack.isRunningJob)
    }

    /// Runs a block's closure, its job on the job's executor, or its function call. Loop thread only.
    @inline(__always)
    func run(_ block: PendingBlock) {
        switch block.work {
        case nil:
            block.closure()
        case .job(let queued):
            runStack.isRunningJob = true
            queued.job.runSynchronously(on: queued.executor)
            runStack.isRunningJob = false
        case .call(let call):
            call.function(call.argument)
        }
    }

    /// A mode whose zero-length pass would run the oldest queued block or actor job (applying changes first), `nil`
    /// when nothing is queued: for the final drain of a ``LoopThread``. The default mode serves work that may run
    /// there (work for the common modes included), else its first mode by name. Loop thread only.
    func modeForQueuedWork() -> Mode? {
        applyChanges()
        guard let block = blocks.first else { return nil }
        switch block.modes {
        case .defaultMode, .commonModes:
            return .default
        case .named(let modes):
            if modes.contains(where: { $0 == .default || $0 == .common }) { return .default }
            return modes.min { $0.name < $1.name }!
        }
    }

    /// From now on, blocks sent from other threads are refused (``perform(in:_:)-(Mode,_)`` answers `false`);
    /// actor jobs and item changes are still taken until the thread exits. For a ``LoopThread``'s stop, so that
    /// every block accepted before it runs in the drain and none is accepted after. Loop thread only.
    func refuseBlocksFromOtherThreads() {
        var taken = Inbox.Contents(blocks: BlockQueue(), changes: [])
        inbox.refuseBlocks(into: &taken)
        absorb(&taken)
    }

    /// Closes the inbox for good (the thread exits, or a ``LoopThread`` ends its drain), applying the changes and
    /// taking the blocks and jobs still in it; later posts are refused. Idempotent. Loop thread only.
    func closeInbox() {
        var taken = Inbox.Contents(blocks: BlockQueue(), changes: [])
        inbox.close(into: &taken)
        absorb(&taken)
    }

    /// Traps if an actor job is still queued as the loop's thread exits: it could never run on the actor's thread
    /// and its task would wait forever. Loop thread only, in the teardown.
    func trapOnQueuedJobs() {
        let jobs = blocks.count { $0.job != nil }
        guard jobs > 0 else { return }
        fatalError(
            "RunLoopKit: the thread of \(loopDescriptionForTraps) exited with \(jobs) actor job(s) still queued; "
                + "they can never run (an actor on a loop needs its thread: run the loop, or keep its LoopThread, "
                + "until the actor's work is done)")
    }

    /// Traps for a job enqueued after the loop's thread exited.
    func trapJobForExitedThread() -> Never {
        fatalError(
            "RunLoopKit: an actor job was enqueued on \(loopDescriptionForTraps), whose thread has exited: the "
                + "actor's loop thread is gone and the job must not run on another thread (a programming error: keep "
                + "the thread, e.g. its LoopThread, alive while its actors are used; called from thread "
                + "\(ThreadIdentity.currentThreadID()))")
    }

    /// Traps unless the caller is on the loop's thread; the message names both threads. Any thread.
    func preconditionIsolatedToLoopThread() {
        guard !isCurrent else { return }
        let caller = ThreadIdentity.describe(ThreadIdentity.currentThreadID())
        fatalError(
            createdBeforeFork
                ? ForkGuard.message
                : "RunLoopKit: code isolated to an actor on \(loopDescriptionForTraps) ran on \(caller), not on the "
                    + "loop's own thread (checkIsolated())")
    }

    /// "the loop of thread 1234 "db"" — the thread's name while it is alive.
    var loopDescriptionForTraps: String {
        "the loop of \(ThreadIdentity.describe(identity.threadID))"
    }
}
