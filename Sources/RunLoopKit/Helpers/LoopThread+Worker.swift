import Glibc
import Synchronization

extension LoopThread {
    /// What the ``LoopThread`` handle and its thread share: admission of work, the stop request, and the control
    /// source that keeps the worker's default mode alive. Safe from any thread.
    final class Worker: Sendable {
        /// Whether stopping began; once true, no work is admitted. Protected by its mutex, which also covers the
        /// hand-off of each admitted block to the loop, so a block is either admitted before the stop or rejected.
        private let admission = Locked<Admission>(Admission())
        /// Mirrors `admission.stopping` for the lock-free checks of the thread body and the control source.
        private let stopRequested = Atomic<Bool>(false)
        /// The control source, once the worker installed it on its loop.
        private let control = Locked<LoopSource?>(nil)

        struct Admission {
            var stopping = false
            /// Admitted blocks not yet run, by the mode whose pass the drain would run them in (see
            /// ``drainMode(for:)``).
            var pending: [Loop.Mode: Int] = [:]
        }

        var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

        /// Queues `work` on `loop` for a pass in any of `modes` unless stopping began; counts it until it has run.
        ///
        /// - Throws: ``LoopError/Code/invalidArgument`` when `modes` is empty (checked first);
        ///   ``LoopError/Code/threadStopped`` once stopping began.
        func admit(
            _ work: @escaping @Sendable () -> Void,
            in modes: [Loop.Mode],
            on loop: Loop
        ) throws(LoopError) {
            try LoopThread.requireModes(modes)
            let drainMode = Self.drainMode(for: modes)
            try admission.withLock { (state: inout Admission) throws(LoopError) -> Void in
                guard !state.stopping else { throw LoopThread.stoppedError() }
                state.pending[drainMode, default: 0] += 1
                let body: @Sendable () -> Void = { [self] in
                    work()
                    admission.withLock { $0.pending[drainMode, default: 1] -= 1 }
                }
                // One mode keeps the core's single-mode fast path (no array to search in each pass).
                let queued = modes.count == 1 ? loop.perform(in: modes[0], body) : loop.perform(in: modes, body)
                precondition(queued, "RunLoopKit: a LoopThread's loop ended before its stop")
            }
        }

        /// The one mode whose zero-length pass runs a block queued for `modes` (not empty) in the drain at stop:
        /// the default mode if the block may run there (it names ``Loop/Mode/default`` or ``Loop/Mode/common``,
        /// which always includes it), else the first of its modes by name.
        static func drainMode(for modes: [Loop.Mode]) -> Loop.Mode {
            if modes.contains(where: { $0 == .default || $0 == .common }) { return .default }
            return modes.min { $0.name < $1.name }!
        }

        /// Closes admission and asks the worker's loop to stop; answers whether this call began the stop.
        @discardableResult
        func requestStop() -> Bool {
            let began = admission.withLock { admission in
                defer { admission.stopping = true }
                return !admission.stopping
            }
            guard began else { return false }
            stopRequested.store(true, ordering: .releasing)
            control.withLock { $0 }?.signal()
            return true
        }

        /// The modes whose passes run the admitted blocks still waiting: the default mode (for blocks that may run
        /// there, the common modes included) first, as the worker's own run would have served them, then the
        /// others by name.
        func modesWithPendingWork() -> [Loop.Mode] {
            let modes = admission.withLock { admission in admission.pending.filter { $0.value > 0 }.map(\.key) }
            return modes.sorted { left, right in
                if (left == .default) != (right == .default) { return left == .default }
                return left.name < right.name
            }
        }

        /// Puts the control source in `loop`'s default mode: it keeps the mode from being empty (so `run()`
        /// sleeps instead of returning) and is signalled only by ``requestStop()``. Worker thread only.
        func installControl(on loop: Loop) throws(LoopError) {
            let source = LoopSource { [weak self] in self?.controlFired() }
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
        let ready = Semaphore()
        var loop: Loop?
        var threadID: pid_t = 0
        var failure: LoopError?

        init(worker: Worker, name: String) {
            self.worker = worker
            self.name = name
        }
    }

    /// The worker thread's whole life: set up, publish the loop, run until stopped, drain admitted work, exit.
    static func body(_ startup: Startup) {
        setCurrentThreadName(startup.name)
        let loop = Loop.current
        let worker = startup.worker
        do {
            try worker.installControl(on: loop)
        } catch {
            startup.failure = error
            startup.ready.post()
            return
        }
        startup.loop = loop
        startup.threadID = currentThreadID()
        startup.ready.post()

        // The core forgets a stop sent while the loop is idle, so the decision is ours: run until our flag is set.
        // The control source's signal is never forgotten, so a stop sent before `run()` starts still ends it.
        while !worker.isStopping {
            loop.run()
        }
        worker.removeControl()
        // Blocks admitted before the stop (possibly before the first run began) run now, each in a pass of a mode it
        // was queued for; so do actor jobs queued before the thread exits (they may queue more jobs and blocks).
        while true {
            let modes = worker.modesWithPendingWork()
            for mode in modes {
                loop.run(in: mode, for: .zero)
            }
            guard modes.isEmpty else { continue }
            guard let mode = loop.modeForQueuedJob() else { break }
            loop.run(in: mode, for: .zero)
        }
    }

    static func stoppedError() -> LoopError {
        LoopError(.threadStopped, message: "the LoopThread was stopped and accepts no more work")
    }

    /// Rejects an empty mode list: a block for no mode could never run (the core drops it and answers `false`;
    /// here that would be a silently lost block, and ``LoopThread/performAndWait(in:_:)-([Loop.Mode],_)`` would
    /// wait forever).
    static func requireModes(_ modes: [Loop.Mode]) throws(LoopError) {
        guard modes.isEmpty else { return }
        throw LoopError(.invalidArgument, message: "a LoopThread block needs at least one mode, got an empty list")
    }
}
