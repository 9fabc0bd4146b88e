import Glibc
import RunLoopKitSystem
import Synchronization

extension LoopThread {
    /// What the ``LoopThread`` handle and its thread share: admission of work, the stop request, and the control
    /// source that keeps the worker's default mode alive. Safe from any thread.
    final class Worker: Sendable {
        /// Set once stopping began: from then on no work is admitted.
        private let stopRequested = Atomic<Bool>(false)
        /// The control source, once the worker installed it on its loop.
        private let control = Locked<LoopSource?>(nil)

        var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

        /// Queues `work` on `loop` for a pass in any of `modes` unless stopping began; answers whether it did.
        ///
        /// No lock and no wrapper: the loop itself is exact. A block its `perform` accepted runs exactly once (in a
        /// pass, or in the drain at stop, which starts by making the loop refuse blocks from other threads), and
        /// one it refused (the stop's drain began) is reported here. A stop that begins between the check and the
        /// `perform` therefore still runs the block. An empty `modes` is refused (a block for no mode never runs).
        @inline(__always)
        func admit(_ work: @escaping @Sendable () -> Void, in modes: [Loop.Mode], on loop: Loop) -> Bool {
            guard !isStopping, !modes.isEmpty else { return false }
            // One mode keeps the core's single-mode fast path (no array to search in each pass).
            return modes.count == 1 ? loop.perform(in: modes[0], work) : loop.perform(in: modes, work)
        }

        /// Closes admission and asks the worker's loop to stop; answers whether this call began the stop.
        @discardableResult
        func requestStop() -> Bool {
            guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return false }
            control.withLock { $0 }?.signal()
            return true
        }

        /// Puts the control source in `loop`'s default mode: it keeps the mode from being empty (so `run()`
        /// sleeps instead of returning) and is signalled only by ``requestStop()``. Worker thread only.
        func installControl(on loop: Loop) throws(LoopError) {
            let source = LoopSource { [weak self] _ in self?.controlFired() }
            control.withLock { $0 = source }
            try loop.add(source, to: .default)
        }

        /// Removes the control source for good, before the final drain. Worker thread only.
        func removeControl() {
            control.withLock { $0 }?.invalidate()
        }

        /// Stops the innermost run; signals itself again so that an outer run (the worker's own, if a block ran
        /// the loop nested in the default mode) stops too.
        private func controlFired() {
            guard isStopping else { return }
            Loop.current.stop()
            control.withLock { $0 }?.signal()
        }
    }

    /// What the thread body needs, handed over through `pthread_create`'s argument.
    final class Startup: @unchecked Sendable {
        // Unchecked Sendable: `loop` and `threadID` are written by the new thread before `ready.post()` and read by
        // the creating thread after `ready.wait()`, which orders them.
        let worker: Worker
        let name: String
        let options: Options
        let ready = Semaphore()
        var loop: Loop?
        var threadID: pid_t = 0
        var failure: LoopError?

        init(worker: Worker, name: String, options: Options) {
            self.worker = worker
            self.name = name
            self.options = options
        }
    }

    /// The worker thread's whole life: set up, publish the loop, run until stopped, drain admitted work, exit.
    static func body(_ startup: Startup) {
        setCurrentThreadName(startup.name)
        let loop: Loop
        let worker = startup.worker
        do throws(LoopError) {
            // Before the loop exists, so a refusal leaves nothing to tear down and no block runs without it.
            if let scheduling = startup.options.schedulingSetByThread {
                do throws(SystemError) {
                    try ThreadCalls.setCurrentScheduling(scheduling)
                } catch {
                    throw startup.options.error(error, startingThread: startup.name)
                }
            }
            // Throws rather than traps when the process is out of descriptors: the creator's init throws it.
            loop =
                try startup.options.virtualTime
                ? LoopRegistry.installVirtual(Loop.VirtualClock(startingAt: 0, advancesWhenIdle: true))
                : Loop.forCurrentThread()
            try worker.installControl(on: loop)
        } catch {
            startup.failure = error
            startup.ready.post()
            return
        }
        startup.loop = loop
        startup.threadID = ThreadIdentity.currentThreadID()
        startup.ready.post()

        // The core forgets a stop sent while the loop is idle, so the decision is ours: run until our flag is set.
        // The control source's signal is never forgotten, so a stop sent before `run()` starts still ends it.
        while !worker.isStopping {
            loop.run()
        }
        worker.removeControl()
        // The drain: from here on the loop refuses blocks from other threads (their `perform` answers false, and so
        // does LoopThread.perform). Every block accepted before (possibly before the first run
        // began) runs now, each in a pass of a mode it was queued for, and so do actor jobs queued until the thread
        // exits (they may queue more jobs and blocks). Closing the inbox takes what is still on its way, jobs
        // included, under its lock; after that nothing more comes in.
        loop.refuseBlocksForLoopThreadDrain()
        while true {
            while let mode = loop.modeForLoopThreadDrain() {
                loop.run(in: mode, for: .zero)
            }
            loop.closeInbox()
            guard loop.modeForLoopThreadDrain() != nil else { break }
        }
    }

    /// The error of work refused by a stopped ``LoopThread`` (or, in a `fork()` child, by one made before the fork).
    func stoppedError() -> LoopError {
        loop.createdBeforeFork
            ? LoopError(
                .threadStopped,
                message: "the LoopThread was created before fork(): its thread does not exist in this child process")
            : LoopError(.threadStopped, message: "the LoopThread was stopped and accepts no more work")
    }

    /// Rejects an empty mode list: a block for no mode could never run (the core drops it and answers `false`;
    /// here that would be a silently lost block, and ``LoopThread/performAndWait(in:_:)-([Loop.Mode],_)`` would
    /// wait forever).
    static func requireModes(_ modes: [Loop.Mode]) throws(LoopError) {
        guard modes.isEmpty else { return }
        throw LoopError(.invalidArgument, message: "a LoopThread block needs at least one mode, got an empty list")
    }
}
