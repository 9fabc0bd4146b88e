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
    /// for the earlier of the first timer's latest fire time and the run's deadline. A loop on virtual time takes
    /// ``waitForEventsVirtually(_:poll:)`` instead: the one test a real loop pays for it here.
    func waitForEvents(poll: Bool) -> Int {
        if let virtual = control.virtualClock { return waitForEventsVirtually(virtual, poll: poll) }
        let state = beginWaiting(poll: poll)
        var block = !poll
        if let state { block = announceSleep(in: state) && armTimer(until: runStack.deadline) }
        let buffer = scratch.eventBuffer(depth: runStack.depth)
        if block {
            metricsBeginSleep()
            inbox.segments.noteSleep()  // Now and then sheds block segments that recent passes left unused.
        }
        let count = blockingWait(into: buffer, block: block)
        if block { metricsEndSleep() }
        return endWaiting(events: count, in: buffer, slept: block, poll: poll)
    }

    /// Step 6's start, the same on either clock: beforeWaiting (unless the loop only polls), and the main queue
    /// watched again if a host's pass or run nested in a handler of this run left it to the host. Answers the running
    /// mode's state when the loop may sleep, `nil` when it only polls.
    @inline(__always)
    private func beginWaiting(poll: Bool) -> ModeState? {
        guard !poll else { return nil }
        notifyObservers(.beforeWaiting)
        guard let state = runStack.mode else { return nil }
        if mainQueue.descriptor == nil && servesMainQueue(in: state) { attachMainQueue() }
        return state
    }

    /// Step 8, the same on either clock: notes when the events came (for hand-over latencies) and main-queue work
    /// among the `count` events in `buffer`, ends the sleep's announcement, forgets a wake-up request the sleep
    /// answered (`slept`), and tells the observers afterWaiting (unless the loop only polled). Answers `count`.
    @inline(__always)
    private func endWaiting(
        events count: Int, in buffer: UnsafeMutableBufferPointer<epoll_event>, slept: Bool, poll: Bool
    ) -> Int {
        noteEventsReturned(count)
        for index in 0..<count where buffer[index].data.u64 == Poller.mainQueueTag {
            mainQueue.hasWork = true
        }
        poller.finishWaiting()
        if slept { control.wakeRequested.store(false, ordering: .relaxed) }
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

    // MARK: Virtual time

    /// ``waitForEvents(poll:)`` on virtual time: the same steps and handshake, but no timerfd is armed and the loop
    /// polls where a real one would sleep; ``settleVirtualClock(_:events:into:)`` then moves the clock or sleeps.
    @inline(never)
    private func waitForEventsVirtually(_ virtual: VirtualClock, poll: Bool) -> Int {
        virtual.idleTarget.store(.min, ordering: .relaxed)
        // Unless a timer is due already, where the clock goes if the poll finds the loop durably idle.
        if let state = beginWaiting(poll: poll), announceSleep(in: state), timerTable.firstFireTime > virtual.now {
            let wakeTime = min(timerTable.firstLatestFireTime ?? .max, runStack.deadline)
            virtual.idleTarget.store(wakeTime, ordering: .relaxed)
        }
        let buffer = scratch.eventBuffer(depth: runStack.depth)
        var count = blockingWait(into: buffer, block: false)
        if !poll { count = settleVirtualClock(virtual, events: count, into: buffer) }
        return endWaiting(events: count, in: buffer, slept: false, poll: poll)
    }

    /// What a loop on virtual time does where a real one sleeps, after the poll that replaced the sleep found `events`
    /// events. The loop is *durably idle* when it announced its sleep finding no work (no signal, block, change,
    /// stop or wake-up from another thread, no local work, no due timer) and the poll then found no descriptor
    /// ready and no wake-up written: everything that could bring work is a descriptor of its epoll set or another
    /// thread's post, which writes the eventfd once it sees ``Poller/isWaiting``. Then the clock jumps to the noted
    /// wake time when it may (``VirtualClock/mayAdvance``); when it may not, or there is nothing to jump to, the loop
    /// sleeps for real, with no timeout, until a descriptor or another thread wakes it. Answers the events to handle.
    func settleVirtualClock(
        _ virtual: VirtualClock, events: Int, into buffer: UnsafeMutableBufferPointer<epoll_event>
    ) -> Int {
        let target = virtual.idleTarget.exchange(.min, ordering: .relaxed)
        guard target != .min, events == 0, signalStack.isEmpty, inbox.isEmpty else {
            virtual.sawIdle.store(false, ordering: .relaxed)
            return events
        }
        let now = virtual.now
        if target > now {
            guard target != .max, virtual.mayAdvance else {
                // Nothing could ever be due, or time is moved by hand: only a descriptor or another thread helps.
                virtual.sawIdle.store(false, ordering: .relaxed)
                metricsBeginSleep()
                inbox.segments.noteSleep()
                let count = blockingWait(into: buffer, block: true)
                metricsEndSleep()
                control.wakeRequested.store(false, ordering: .relaxed)
                return count
            }
            metricsBeginSleep()
            inbox.segments.noteSleep()  // A jump of the clock is this loop's sleep: the pool sheds as a real one's.
            virtual.nanoseconds.store(target, ordering: .relaxed)
            metricsEndSleep()
        }
        // Idle at the target only if nothing falls due there: what does fires in this pass, and the next one looks
        // again.
        virtual.sawIdle.store(timerTable.firstFireTime > target, ordering: .relaxed)
        return 0
    }

    /// Whether a run that reached its deadline may end: always on real time; on virtual time only after a durably
    /// idle pass (``settleVirtualClock(_:events:into:)``), so everything the deadline's instant made ready runs first.
    func virtualRunMayEnd() -> Bool {
        guard let virtual = control.virtualClock else { return true }
        return virtual.sawIdle.exchange(false, ordering: .relaxed)
    }
}
