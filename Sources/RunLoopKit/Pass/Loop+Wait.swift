import CRunLoopShims
import Glibc

/// Steps 6 to 8 of a pass: announcing the sleep, sleeping in `epoll_wait` (or polling), and waking. The sleep
/// side of the wake-up handshake is here; the wakers' side is ``Poller/wakeIfSleeping()``, and the model of both
/// is WakeUpHandshake.pml, checked with spin by scripts/check/check-handshake.sh.
extension Loop {
    /// Steps 6 to 8: beforeWaiting, sleep in `epoll_wait` (or poll), afterWaiting; answers how many events came.
    ///
    /// The loop sleeps only if, after announcing it is about to (``Poller/isWaiting``), it still finds no signal,
    /// block, change, stop or wake-up sent by another thread, no local work and no due timer. The timerfd is armed
    /// for the earlier of the first timer's latest fire time and the run's deadline.
    func waitForEvents(poll: Bool) -> Int {
        if !poll { notifyObservers(.beforeWaiting) }
        var block = !poll
        if block, let state = runStack.mode {
            // A host's pass or run nested in a handler of this run left the main queue to the host: watch it again.
            if mainQueue.descriptor == nil && servesMainQueue(in: state) { attachMainQueue() }
            block = announceSleep(in: state) && armTimer(until: runStack.deadline)
        }
        let buffer = scratch.eventBuffer(depth: runStack.depth)
        if block {
            metricsBeginSleep()
            inbox.segments.noteSleep()  // Now and then sheds block segments that recent passes left unused.
        }
        let count = blockingWait(into: buffer, block: block)
        if block { metricsEndSleep() }
        for index in 0..<count where buffer[index].data.u64 == Poller.mainQueueTag {
            mainQueue.hasWork = true
        }
        poller.finishWaiting()
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
    /// `isWaiting` stays set either way; ``Poller/finishWaiting()`` clears it.
    func announceSleep(in state: ModeState, evenIfEmpty: Bool = false) -> Bool {
        poller.isWaiting.store(true, ordering: .sequentiallyConsistent)
        return signalStack.isEmpty && inbox.isEmpty && !control.stopRequested.load(ordering: .sequentiallyConsistent)
            && !control.wakeRequested.exchange(false, ordering: .sequentiallyConsistent) && !hasLocalWork(in: state)
            && (evenIfEmpty || !nothingKeepsAlive(state))
    }

    /// Whether work for a run in `state` is already queued on this thread: a block or actor job, a signalled
    /// source, or main-queue work the loop has been told of and may serve now.
    private func hasLocalWork(in state: ModeState) -> Bool {
        if mainQueue.hasWork && servesMainQueue(in: state) { return true }
        if blocks.contains(where: { canRun($0, state) }) { return true }
        return signalStack.pending.contains { $0.isIn(modeID: state.id) } || hasFailedSource(in: state)
    }
}
