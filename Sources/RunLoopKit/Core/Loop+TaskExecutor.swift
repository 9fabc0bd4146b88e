/// A loop as a task executor (SE-0417): `withTaskExecutorPreference(loop) { … }` and
/// `Task(executorPreference: loop) { … }` run nonisolated async code, and the child tasks of a group made inside,
/// on the loop's thread, at the block points of passes in its common modes, in order with blocks and actor jobs.
/// ``LoopExecutor`` (``Loop/executor(in:)``) is a task executor too, for other modes.
///
/// Threading: ``enqueue(_:)`` is called by the runtime from any thread; the jobs run on the loop's thread only,
/// one at a time. Enqueueing costs what an actor's job costs: nothing allocated beyond the runtime's job, and an
/// eventfd write only when the loop sleeps. Code isolated to an actor (`@MainActor` included) still runs on that
/// actor's executor: the preference applies to nonisolated code. A task that prefers the loop and calls an actor
/// whose executor is the same loop runs its code without a hop, since the job knows both executors are the loop.
///
/// As for actor jobs, a job that arrives after the loop's thread exited traps, and an `UnownedTaskExecutor` does not
/// retain the loop: keep the loop (or its ``LoopThread``) alive while tasks prefer it.
extension Loop: TaskExecutor {
    /// The loop as a task executor, for the runtime. Safe from any thread; does not retain the loop.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}

/// A loop executor for other modes as a task executor: nonisolated code of tasks that prefer it runs on the loop's
/// thread in passes of its ``LoopExecutor/modes``. The same rules as for ``Loop``'s conformance apply.
extension LoopExecutor: TaskExecutor {
    /// The executor as a task executor, for the runtime. Safe from any thread; does not retain it: keep the executor
    /// (for example in a stored property) while tasks prefer it.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
