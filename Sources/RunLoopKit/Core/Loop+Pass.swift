import CRunLoopShims
import Glibc

/// The steps of one pass, in CF's order (Docs/Iteration.md numbers them). Loop thread only.
extension Loop {
    /// Step 0: applies item changes other threads sent, and takes their blocks into the local queue.
    func applyChanges() {
        guard !inbox.isEmpty else { return }
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
    func takeBlockQueue() -> BlockQueue {
        scratch.blockQueues.popLast() ?? BlockQueue()
    }

    /// Keeps the empty queue `queue` (and its segment) for ``takeBlockQueue()``. Loop thread only.
    func giveBlockQueue(_ queue: inout BlockQueue) {
        if scratch.blockQueues.count < 4 {
            scratch.blockQueues.append(queue)
        } else {
            queue.releaseSegment(to: inbox.segments)
        }
        queue = BlockQueue()
    }

    /// Steps 1, 2, 6, 8 and the run's entry and exit: calls the current mode's observers of `activity`.
    ///
    /// Observers added during the call are not called this time; one whose handler is running (a nested run)
    /// is skipped; one invalidated before its turn is skipped.
    func notifyObservers(_ activity: Activity) {
        guard let state = runStack.mode, state.observedActivities.contains(activity) else { return }
        let snapshot = state.observers  // Retains the array; a change during the calls copies it instead.
        for observer in snapshot where observer.activities.contains(activity) {
            guard observer.isValid, !observer.isFiring else { continue }
            observer.isFiring = true
            observer.handler(observer, activity)
            observer.isFiring = false
            if !observer.repeats { observer.invalidate() }
        }
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

    @inline(__always)
    func matches(_ modes: BlockModes, _ state: ModeState) -> Bool {
        switch modes {
        case .defaultMode:
            return state.isDefault
        case .commonModes:
            return state.isCommon
        case .named(let list):
            return list.contains { matches($0, state) }
        }
    }

    private func matches(_ mode: Mode, _ state: ModeState) -> Bool {
        mode == state.name || (mode == .common && state.isCommon)
    }

    /// Step 4: performs the signalled sources of the running mode, lower order first; answers whether any ran.
    ///
    /// With `onlyOne`, performs the first and leaves the rest signalled for the next pass. A source signalled
    /// again during its own perform runs in a later pass.
    func performSignalledSources(onlyOne: Bool) -> Bool {
        signalStack.popAll { source in queueSignalled(source) }
        guard let state = runStack.mode, !signalledSources.isEmpty else { return false }

        var due = scratch.sources.take()
        var kept = 0
        for index in signalledSources.indices {
            let source = signalledSources[index]
            if !source.isValid || !source.isInAnyMode {
                source.queued = false  // Re-queued by `addToMode` if it is added again while signalled.
            } else if source.isIn(modeID: state.id) && (!onlyOne || due.isEmpty) {
                source.queued = false
                due.append(source)
            } else {
                signalledSources[kept] = source
                kept += 1
            }
        }
        signalledSources.removeLast(signalledSources.count - kept)

        var performed = false
        for source in due {
            guard source.isValid else { continue }
            // An earlier callout of this pass may have taken the source out of the running mode (CF performs it
            // anyway): it keeps its signal for a pass of a mode it is still in.
            guard source.isIn(modeID: state.id) else {
                if source.isInAnyMode && source.signalled.load(ordering: .acquiring) { queueSignalled(source) }
                continue
            }
            guard source.signalled.exchange(false, ordering: .acquiringAndReleasing) else { continue }
            source.performHandler(source)
            performed = true
        }
        scratch.sources.give(&due)
        return performed
    }

    /// Inserts a signalled source into the sorted queue (after sources of equal order), once.
    func queueSignalled(_ source: LoopSource) {
        guard !source.queued, source.isValid else { return }
        source.queued = true
        var low = 0
        var high = signalledSources.count
        while low < high {
            let middle = (low + high) / 2
            if signalledSources[middle].order <= source.order { low = middle + 1 } else { high = middle }
        }
        signalledSources.insert(source, at: low)
    }

    /// Steps 6 to 8: beforeWaiting, sleep in `epoll_wait` (or poll), afterWaiting; answers how many events came.
    ///
    /// The loop sleeps only if, after announcing it is about to (``Poller/isWaiting``), it still finds no signal,
    /// block, change, stop or wake-up sent by another thread, no local work and no due timer. The timerfd is armed
    /// for the earlier of the first timer's latest fire time and the run's deadline.
    func waitForEvents(poll: Bool) -> Int {
        if !poll { notifyObservers(.beforeWaiting) }
        var block = !poll
        if block, let state = runStack.mode {
            block = announceSleep(in: state) && armTimer(until: runStack.deadline)
        }
        let buffer = scratch.eventBuffer(depth: runStack.depth)
        let count = blockingWait(into: buffer, block: block)
        var wakeUpFired = false
        for index in 0..<count {
            switch buffer[index].data.u64 {
            case Poller.wakeUpTag: wakeUpFired = true
            case Poller.mainQueueTag: mainQueue.hasWork = true
            default: break
            }
        }
        poller.finishWaiting(eventFDFired: wakeUpFired)
        if block { control.wakeRequested.store(false, ordering: .relaxed) }
        if !poll { notifyObservers(.afterWaiting) }
        return count
    }

    /// The one place the loop blocks, under a stable name for profiles.
    @inline(never)
    func blockingWait(into buffer: UnsafeMutableBufferPointer<epoll_event>, block: Bool) -> Int {
        poller.wait(into: buffer, block: block)
    }

    /// The loop's side of the wake-up handshake: announces that the loop is about to sleep (``Poller/isWaiting``),
    /// then looks again for work another thread may have published just before. Answers whether the loop may sleep
    /// for a run in `state`: no signal, block, change, stop or wake-up sent by another thread, no local work, and
    /// something left that could wake it (unless `evenIfEmpty`: a host loop waits for other threads' work even then).
    /// `isWaiting` stays set either way; ``Poller/finishWaiting(eventFDFired:)`` clears it.
    func announceSleep(in state: ModeState, evenIfEmpty: Bool = false) -> Bool {
        poller.isWaiting.store(true, ordering: .sequentiallyConsistent)
        return signalStack.isEmpty && inbox.isEmpty && !control.stopRequested.load(ordering: .sequentiallyConsistent)
            && !control.wakeRequested.exchange(false, ordering: .sequentiallyConsistent) && !hasLocalWork(in: state)
            && (evenIfEmpty || !nothingKeepsAlive(state))
    }

    /// Arms the timerfd for the earlier of the first timer's latest fire time and `deadline`; answers false, arming
    /// nothing, when that time has come or is closer than ``sleepHorizon`` (so the loop polls instead of sleeping).
    func armTimer(until deadline: Int64) -> Bool {
        let wakeTime = min(
            timerTable.heap.first?.latestFireTime ?? .max, timerTable.callbacks.first?.latestFireTime ?? .max, deadline)
        guard wakeTime != .max else { return true }
        let now = MonotonicClock.now()
        guard wakeTime - now > Self.sleepHorizon else { return false }
        poller.arm(for: wakeTime, now: now)
        return true
    }

    /// How soon a wake-up must be for the loop to poll its way to it instead of sleeping: 20 µs. Arming the timerfd
    /// for a time that becomes the CPU's earliest timer costs 12–14 µs on a KVM guest (the shared benchmark notes),
    /// and the timer interrupt and the wake-up after it cost as much again, so sleeping for less than that is slower
    /// than polling and fires later. A loop with timers this dense (a backlog of due timers, a 10 µs repeating timer)
    /// polls `epoll_wait` without blocking until the time comes; descriptors and other threads' work are still seen
    /// on every poll. CF always sleeps.
    static let sleepHorizon: Int64 = 20_000

    /// Whether work for a run in `state` is already queued on this thread: a block or actor job, a signalled
    /// source, or main-queue work the loop has been told of and may serve now.
    private func hasLocalWork(in state: ModeState) -> Bool {
        if mainQueue.hasWork && servesMainQueue(in: state) { return true }
        if blocks.contains(where: { canRun($0, state) }) { return true }
        return signalledSources.contains { $0.isIn(modeID: state.id) }
    }

    /// Step 9a: fires the running mode's due timers and callbacks, in order of latest fire time (fire time when no
    /// tolerance), then of scheduling.
    ///
    /// Due timers and callbacks of modes not running are parked until one of their modes runs. A repeating timer is
    /// put back on its grid after its handler; a one-shot timer is invalidated. Everything due when the pass looked
    /// fires in this pass; what a handler schedules for now waits for the next one.
    func fireDueTimers() {
        guard let state = runStack.mode else { return }
        let nextTimer = timerTable.heap.first?.fireTime ?? .max
        let nextCallback = timerTable.callbacks.first?.fireTime ?? .max
        guard min(nextTimer, nextCallback) != .max else { return }
        let now = MonotonicClock.now()
        guard min(nextTimer, nextCallback) <= now else { return }
        var due = scratch.timers.take()
        if nextTimer <= now { takeDueTimers(before: now, in: state, into: &due) }
        var dueCallbacks = scratch.callbacks.take()
        while let first = timerTable.callbacks.first, first.fireTime <= now {
            let entry = timerTable.callbacks.takeFirstAsDue()
            if callbackRuns(modeID: timerTable.callbacks.modeID(ofSlot: entry.slot), in: state) {
                dueCallbacks.append(entry)
            } else {
                timerTable.callbacks.park(entry)
            }
        }
        // Both lists are in heap order: merge them, so timers and callbacks fire in one order.
        var timerIndex = 0
        var callbackIndex = 0
        while timerIndex < due.count || callbackIndex < dueCallbacks.count {
            if callbackIndex < dueCallbacks.count,
                timerIndex == due.count || dueCallbacks[callbackIndex].precedes(due[timerIndex])
            {
                fire(dueCallbacks[callbackIndex])
                callbackIndex += 1
            } else {
                fire(due[timerIndex], in: state)
                timerIndex += 1
            }
        }
        scratch.timers.give(&due)
        scratch.callbacks.give(&dueCallbacks)
    }

    private func takeDueTimers(before now: Int64, in state: ModeState, into due: inout [LoopTimer]) {
        while let timer = timerTable.heap.first, timer.fireTime <= now {
            timerTable.heap.remove(timer)
            if timer.isIn(modeID: state.id) {
                timer.state = .due
                due.append(timer)
            } else {
                timer.state = .parked
                timerTable.parked.append(timer)
            }
        }
    }

    private func fire(_ timer: LoopTimer, in state: ModeState) {
        guard timer.state == .due else { return }  // Rescheduled, removed or invalidated meanwhile.
        guard timer.isValid else {
            timer.state = .idle
            return
        }
        // An earlier handler of this pass took the timer out of the running mode but not out of all its modes
        // (CF fires it anyway): it waits, due, for one of its modes to run.
        guard timer.isIn(modeID: state.id) else {
            timer.state = .parked
            timerTable.parked.append(timer)
            return
        }
        timer.state = .firing
        timer.handler(timer)
        guard timer.state == .firing else { return }  // The handler rescheduled or invalidated it.
        if !timer.repeats {
            timer.state = .idle
            // `invalidate()` without its trip through the any-thread path: this is the loop's thread.
            if timer.markInvalid() { detachNow(.timer(timer)) }
        } else if !timer.isInAnyMode {
            timer.state = .idle
        } else {
            timer.fireTime = nextGridTime(after: timer.fireTime, interval: timer.intervalNanoseconds)
            schedule(timer)
        }
    }

    /// Runs a due callback unless an earlier handler of this pass cancelled it; its slot is free before it runs.
    private func fire(_ entry: CallbackTimers.Entry) {
        var callback: CallbackTimers.Stored?
        guard let slot = timerTable.callbacks.takeForFiring(entry, callback: &callback), let callback else { return }
        callbackEnded(slot)
        callback.run()
    }

    /// The first time on `fired + k * interval` (k >= 1) that is later than now: missed fire times are skipped.
    private func nextGridTime(after fired: Int64, interval: Int64) -> Int64 {
        let now = MonotonicClock.now()
        guard fired <= now else { return fired.addingSaturating(interval) }
        let missed = (now - fired) / interval + 1
        let (offset, overflow) = missed.multipliedReportingOverflow(by: interval)
        return overflow ? .max : fired.addingSaturating(offset)
    }

    /// Step 9b: calls the handlers of the running mode's ready descriptor sources, lower order first; answers
    /// whether any was handled. Reports of a descriptor whose registration was replaced or removed are dropped;
    /// a source ready while none of its modes runs is taken out of the epoll set until one does.
    func handleReadyDescriptors(count: Int) -> Bool {
        guard count > 0, let state = runStack.mode else { return false }
        let buffer = scratch.eventBuffer(depth: runStack.depth)
        var ready = scratch.readyDescriptors.take()
        for index in 0..<count {
            let tag = buffer[index].data.u64
            guard tag > Poller.lastLoopTag else { continue }
            let descriptor = CInt(bitPattern: UInt32(truncatingIfNeeded: tag))
            guard let source = descriptorTable.registered[descriptor], source.epollTag == tag, source.isValid else {
                continue
            }
            if source.isIn(modeID: state.id) {
                let events = FileDescriptorSource.Events(epoll: Epoll.Events(rawValue: buffer[index].events))
                let position = ready.firstIndex { $0.0.order > source.order } ?? ready.endIndex
                ready.insert((source, events), at: position)
            } else {
                park(source)
            }
        }
        var handled = false
        for (source, events) in ready where source.isValid && source.isIn(modeID: state.id) {
            source.handler(source, events)
            handled = true
        }
        scratch.readyDescriptors.give(&ready)
        return handled
    }
}
