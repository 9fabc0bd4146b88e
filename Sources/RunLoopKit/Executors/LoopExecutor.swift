/// A loop's serial executor for actors whose jobs must run in a chosen set of modes (``Loop/executor(in:)``), for
/// instance `[.default, "tracking"]` so they also run while the loop runs nested in `"tracking"`.
///
/// Threading: immutable, safe from any thread. Its jobs run on the loop's thread only, one at a time, in order with
/// the loop's blocks, at the block points of passes in one of ``modes``. Every executor of a loop (the loop itself
/// included) runs on the same thread; jobs of different executors of one loop never run at the same time, and a job
/// never runs inside another.
///
/// Lifetime: `asUnownedSerialExecutor()` does not retain the executor. The actor must keep it in a stored
/// property (which also keeps the loop alive), for example:
/// ```swift
/// actor Tracker {
///     let executor: LoopExecutor
///     nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
/// }
/// ```
/// Dead loop: as for ``Loop/enqueue(_:)``, a job that arrives after the loop's thread exited traps.
public final class LoopExecutor: SerialExecutor {
    /// The loop whose thread runs the jobs.
    public let loop: Loop
    /// The modes whose passes run the jobs (``Loop/Mode/common`` stands for every common mode); never empty.
    public let modes: [Loop.Mode]
    /// The modes as blocks carry them.
    let blockModes: BlockModes

    init(loop: Loop, modes: [Loop.Mode]) {
        self.loop = loop
        self.modes = modes
        // One mode keeps the core's single-mode fast path (no array to search in each pass).
        blockModes = BlockModes(modes)
    }

    /// Queues an actor's job to run once on the loop's thread, at the next block point of a pass in one of
    /// ``modes``. Called by the concurrency runtime, from any thread; allocates nothing beyond the runtime's job.
    /// Traps if the loop's thread has exited (see ``Loop/enqueue(_:)``).
    public func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueueJob(UnownedJob(job), in: blockModes, on: self, for: nil)
    }

    /// The executor for an actor's `unownedExecutor`. Does not retain it: the actor must store the executor.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Traps unless called on the loop's thread, naming both threads. Safe from any thread.
    public func checkIsolated() {
        loop.preconditionIsolatedToLoopThread()
    }

    /// Whether the calling thread is the loop's thread. Safe from any thread.
    public func isIsolatingCurrentContext() -> Bool? {
        loop.isCurrent
    }
}

extension Loop {
    /// An executor for actors whose jobs run on this loop's thread in passes of any of `modes` (the loop itself,
    /// as an executor, uses its common modes). Safe from any thread; each call makes a new executor, which the
    /// actor must store (see ``LoopExecutor``).
    ///
    /// - Throws: ``LoopError/Code/invalidArgument`` when `modes` is empty: a job for no mode could never run.
    public func executor(in modes: [Mode]) throws(LoopError) -> LoopExecutor {
        guard !modes.isEmpty else {
            throw LoopError(.invalidArgument, message: "a loop executor needs at least one mode, got an empty list")
        }
        return LoopExecutor(loop: self, modes: modes)
    }
}
