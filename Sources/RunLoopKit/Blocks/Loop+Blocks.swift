import Synchronization

/// Blocks: work queued to run once on the loop's thread at the block points of a pass (steps 3, 5 and 10 of
/// Docs/Iteration.md), from any thread; CF's `CFRunLoopPerformBlock`. Actor jobs ride the same queue
/// (Loop+Executor.swift), and so do item changes other threads send (applied at step 0).
extension Loop {
    /// Queues `block` to run once on the loop's thread, at the next block point of a pass in `mode`.
    ///
    /// Safe from any thread. Blocks run in the order they were queued (per thread). A block for a mode that is not
    /// running waits for a pass in it; ``Mode/common`` matches every common mode. Unlike CF, a block queued from
    /// another thread wakes the loop if it sleeps.
    /// - Parameters:
    ///   - mode: The mode whose passes may run the block. Default ``Mode/default``.
    ///   - block: The work.
    ///   - file: Where the block is queued, for the flight recorder
    ///     (``enableFlightRecorder(passes:calloutsPerPass:)``); leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Returns: `false` if the loop is ``isTerminated`` (its thread has exited, or it was created before a
    ///   `fork()` of this process), so the block will never run.
    @inlinable @discardableResult
    public func perform(
        in mode: Mode = .default, _ block: consuming @escaping @Sendable () -> Void, file: StaticString = #fileID,
        line: UInt = #line
    ) -> Bool {
        // Inlined where it is called: `loop.perform { … }` is known at compile time to post to the default mode, with
        // no mode to build or compare.
        mode.name == Mode.default.name
            ? postToDefaultMode(block, file: file, line: line) : post(in: mode, block, file: file, line: line)
    }

    /// ``perform(in:_:file:line:)-(Mode,_,_,_)`` in the default mode.
    @usableFromInline
    func postToDefaultMode(
        _ block: consuming @escaping @Sendable () -> Void, file: StaticString, line: UInt
    ) -> Bool {
        post(PendingBlock(modes: .defaultMode, closure: block, site: CallSite(file: file, line: line)))
    }

    /// ``perform(in:_:file:line:)-(Mode,_,_,_)`` in another mode.
    @usableFromInline
    func post(
        in mode: Mode, _ block: consuming @escaping @Sendable () -> Void, file: StaticString, line: UInt
    ) -> Bool {
        post(PendingBlock(modes: blockModes(for: mode), closure: block, site: CallSite(file: file, line: line)))
    }

    /// Queues `block` to run once on the loop's thread, at the next block point of a pass in any of `modes`.
    ///
    /// See ``perform(in:_:file:line:)-(Mode,_,_,_)``. An empty `modes` list names no pass the block could run in:
    /// the block is dropped at once (not kept forever, never to run) and the call answers `false`.
    /// - Parameters:
    ///   - modes: The modes whose passes may run the block.
    ///   - block: The work.
    ///   - file: Where the block is queued, for the flight recorder; leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Returns: `false` if `modes` is empty or the loop is ``isTerminated`` (its thread has exited, or it was
    ///   created before a `fork()` of this process), so the block will never run.
    @discardableResult
    public func perform(
        in modes: [Mode], _ block: consuming @escaping @Sendable () -> Void, file: StaticString = #fileID,
        line: UInt = #line
    ) -> Bool {
        // Terminated: checked before the modes' lock, which, in a fork() child, a parent thread may have held.
        guard !modes.isEmpty, !isTerminated else { return false }
        for mode in modes where mode != .default && mode != .common {
            publishedModes.withLock { names in names.noteNamedByBlock(mode) }
        }
        return post(PendingBlock(modes: BlockModes(modes), closure: block, site: CallSite(file: file, line: line)))
    }

    /// Queues a call of `function(argument)` on the loop's thread, at the next block point of a pass in `mode` (or
    /// any common mode, for ``Mode/common``); like ``perform(in:_:file:line:)-(Mode,_,_,_)`` in every other respect.
    /// Safe from any thread.
    ///
    /// The allocation-free way to post: a block is a Swift closure, whose captured values live in a context
    /// allocated on the posting thread and freed on the loop's (a third of the cost of a cross-thread post, and
    /// contended in malloc when many threads post); `function` is a C function pointer, which captures nothing (the
    /// compiler refuses a closure that would), and `argument` is one word the loop stores in the queue: an index
    /// into a table of yours, a count, or the bits of an `Unmanaged` reference. CF's version 0 sources and libuv's
    /// callbacks pass their data the same way.
    /// - Parameters:
    ///   - mode: The mode whose passes may make the call. Default ``Mode/default``.
    ///   - argument: The word `function` is called with.
    ///   - function: The function to call.
    ///   - file: Where the call is queued, for the flight recorder; leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Returns: `false` if the loop is ``isTerminated`` (its thread has exited, or it was created before a
    ///   `fork()` of this process), so the call will never happen.
    @inlinable @discardableResult
    public func perform(
        in mode: Mode = .default, with argument: Int, _ function: @convention(c) (Int) -> Void,
        file: StaticString = #fileID, line: UInt = #line
    ) -> Bool {
        // Inlined where it is called, as the closure form.
        mode.name == Mode.default.name
            ? postToDefaultMode(with: argument, function, file: file, line: line)
            : post(in: mode, with: argument, function, file: file, line: line)
    }

    /// ``perform(in:with:_:file:line:)`` in the default mode.
    @usableFromInline
    func postToDefaultMode(
        with argument: Int, _ function: @convention(c) (Int) -> Void, file: StaticString, line: UInt
    ) -> Bool {
        let call = FunctionCall(function: function, argument: argument, site: CallSite(file: file, line: line))
        return post(PendingBlock(modes: .defaultMode, call: call))
    }

    /// ``perform(in:with:_:file:line:)`` in another mode.
    @usableFromInline
    func post(
        in mode: Mode, with argument: Int, _ function: @convention(c) (Int) -> Void, file: StaticString, line: UInt
    ) -> Bool {
        let call = FunctionCall(function: function, argument: argument, site: CallSite(file: file, line: line))
        return post(PendingBlock(modes: blockModes(for: mode), call: call))
    }

    /// The modes of a block queued for `mode`.
    @inline(__always)
    private func blockModes(for mode: Mode) -> BlockModes {
        if mode == .default { return .defaultMode }
        if mode == .common { return .commonModes }
        return .named(blockModeList(naming: mode))
    }

    /// Records that a block named `mode` (neither the default nor the common mode), so ``allModes`` lists it from
    /// now on (as CF creates a block's modes), and answers the one-element list such blocks hold, made once per
    /// mode so that queueing allocates nothing.
    private func blockModeList(naming mode: Mode) -> [Mode] {
        // A terminated loop refuses the block anyway; in a fork() child a parent thread may have held the lock.
        guard !isTerminated else { return [mode] }
        return publishedModes.withLock { names in names.blockModeList(naming: mode) }
    }

    @inline(__always)
    private func post(_ block: consuming PendingBlock) -> Bool {
        // Also refuses, before the inbox's lock, a parent's loop in a fork() child (see ``ForkGuard``).
        if isTerminated { return false }
        if isCurrent {
            blocks.append(block, pool: inbox.segments)
            noteLocalWork()
            return true
        }
        switch inbox.post(block, isClosureBlock: true, stamp: handOverStamp()) {
        case .refused:  // The thread is exiting, or its LoopThread is stopping (``refuseBlocksForLoopThreadDrain()``).
            return false
        case .queuedFirst:
            poller.wakeIfSleeping()
            return true
        case .queuedBehind:  // The post that found the inbox empty wakes the loop for the whole batch.
            return true
        }
    }

    /// Step 0: applies item changes other threads sent, and takes their blocks into the local queue.
    func applyChanges() {
        guard !inbox.isEmpty else { return }
        // Blocks only, as nearly always: relinked into the local queue under the lock, no scratch arrays touched.
        if inbox.takeBlocksUnlessChanged(appendingTo: &blocks) { return }
        var taken = Inbox.Contents(blocks: takeBlockQueue(), changes: scratch.changes.take())
        inbox.takeAll(into: &taken)
        absorb(&taken)
        giveBlockQueue(&taken.blocks)
        scratch.changes.give(&taken.changes)
    }

    /// Takes what other threads handed over: blocks join the local queue, changes are applied where they were
    /// posted among the blocks (a change that queues blocks queues them after the blocks posted before it).
    /// Leaves `taken` empty.
    @inline(__always)
    func absorb(_ taken: inout Inbox.Contents) {
        guard !taken.changes.isEmpty else {
            // The common case: blocks only, handed over whole by relinking their segments.
            blocks.append(contentsOf: &taken.blocks)
            return
        }
        var absorbed = 0
        for change in taken.changes {
            while absorbed < change.blocksBefore, let block = taken.blocks.popFirst(pool: inbox.segments) {
                blocks.append(block, pool: inbox.segments)
                absorbed += 1
            }
            change.apply()
        }
        blocks.append(contentsOf: &taken.blocks)
        taken.changes.removeAll(keepingCapacity: true)
    }

    /// An empty block queue, usually one that kept a segment, so a pass allocates nothing. Loop thread only.
    @inline(__always)
    func takeBlockQueue() -> BlockQueue {
        scratch.blockQueues.take()
    }

    /// Keeps the empty queue `queue` (and its segment) for ``takeBlockQueue()``. Loop thread only.
    @inline(__always)
    func giveBlockQueue(_ queue: inout BlockQueue) {
        scratch.blockQueues.give(&queue, pool: inbox.segments)
    }

    /// Steps 3 and 5: runs the queued blocks and actor jobs whose modes match the running mode, oldest first.
    ///
    /// Blocks for other modes (and jobs, in a run nested inside a job) keep their place ahead of blocks queued
    /// meanwhile.
    func runBlocks() {
        applyChanges()
        guard let state = runStack.mode, !blocks.isEmpty else { return }
        var batch = takeBlockQueue()
        swap(&batch, &blocks)
        // Blocks for other modes are rare: their queue is only taken when one turns up.
        var waiting: BlockQueue?
        // Each block is moved out of the batch and run as its own value (a block borrowed from storage would be
        // copied for the call, retaining its closure's context only to release it after). Nothing but this
        // function touches `batch` meanwhile: a nested run takes queues of its own.
        while let block = batch.popFirst(pool: inbox.segments) {
            if canRun(block, state) {
                run(block)
            } else {
                if waiting == nil { waiting = takeBlockQueue() }
                waiting!.append(block, pool: inbox.segments)
            }
        }
        if waiting != nil {  // Mutated in place: binding it to a new variable would copy the queue.
            waiting!.append(contentsOf: &blocks)
            swap(&waiting!, &blocks)
            giveBlockQueue(&waiting!)
        }
        giveBlockQueue(&batch)
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
        case .closure(let site):
            MetricsKeeper.bump(metricsKeeper.blocksRun)
            recordHandOver(.block, stamp: block.postedAt)
            let token = recordCalloutStart(.block, at: site)
            block.closure()
            recordCalloutEnd(token)
        case .job(let queued):
            MetricsKeeper.bump(metricsKeeper.jobsRun)
            recordHandOver(.job, stamp: block.postedAt)
            let token = recordCalloutStart(.actorJob, at: .unknown)
            runStack.isRunningJob = true
            let serial = queued.executor?.asUnownedSerialExecutor() ?? asUnownedSerialExecutor()
            if let taskExecutor = queued.taskExecutor {
                // A task that prefers the loop: it runs with the loop as its serial executor too, so a call to an
                // actor on the same loop goes in without a hop.
                queued.job.runSynchronously(isolatedTo: serial, taskExecutor: taskExecutor.asUnownedTaskExecutor())
            } else {
                queued.job.runSynchronously(on: serial)
            }
            recordCalloutEnd(token)
            runStack.isRunningJob = false
        case .call(let call):
            MetricsKeeper.bump(metricsKeeper.blocksRun)
            recordHandOver(.block, stamp: block.postedAt)
            let token = recordCalloutStart(.block, at: call.site)
            call.function(call.argument)
            recordCalloutEnd(token)
        }
    }

    @inline(__always)
    func matches(_ modes: BlockModes, _ state: ModeState) -> Bool {
        // The two cases without a list first, matched without binding one: a `switch` that binds the list copies
        // the whole enum out of line first (about 24 instructions per block, retain and release included).
        if case .defaultMode = modes { return state.isDefault }
        if case .commonModes = modes { return state.isCommon }
        return matchesNamed(modes, state)
    }

    @inline(never)
    private func matchesNamed(_ modes: BlockModes, _ state: ModeState) -> Bool {
        guard case .named(let list) = modes else { return false }
        return list.contains { matches($0, state) }
    }

    private func matches(_ mode: Mode, _ state: ModeState) -> Bool {
        mode == state.name || (mode == .common && state.isCommon)
    }
}
