/// A loop's task executor (SE-0417): tasks that prefer it run their nonisolated async code, and the child tasks of
/// a group made inside, on the loop's thread, at the block points of passes in its modes, in order with blocks and
/// actor jobs:
///
/// ```swift
/// let worker = try LoopThread(name: "parser")
/// let onWorker = worker.loop.taskExecutor
/// let count = await withTaskExecutorPreference(onWorker) { await Task { 21 * 2 }.value }
/// print(count)                                            // prints "42"
/// worker.stop()
/// ```
///
/// Why an object of its own, and not the loop: the runtime tells where a job runs by the identity of its task
/// executor. Were the loop its own task executor, every actor job on it would run with the loop as task executor
/// too, which cost the actor's callers dearly (a 16-task fan-in on one loop actor fell from about 80 M to 13 M calls
/// per second); and a loop that handed the runtime another object from `asUnownedTaskExecutor()` gave the runtime
/// two identities for one executor (the runtime also takes a preference's identity straight from the value), which
/// crashed. A separate type has one identity everywhere, and actor jobs never see it.
///
/// Threading: immutable, safe from any thread; `enqueue` is called by the runtime from any thread, and the jobs run
/// on the loop's thread only, one at a time. Enqueueing costs what an actor's job costs: nothing allocated beyond the
/// runtime's job, an eventfd write only when the loop sleeps. It keeps its loop (and its ``LoopExecutor``) alive;
/// a job that arrives after the loop's thread exited traps, as an actor's does.
public final class LoopTaskExecutor: TaskExecutor {
    /// The loop whose thread runs the tasks' code.
    public let loop: Loop
    /// The loop executor whose modes the jobs run in, or `nil` for the loop's common modes.
    public let executor: LoopExecutor?
    private let blockModes: BlockModes

    init(loop: Loop, executor: LoopExecutor?) {
        self.loop = loop
        self.executor = executor
        blockModes = executor?.blockModes ?? .commonModes
    }

    /// The modes whose passes run the jobs (``Loop/Mode/common`` for every common mode).
    public var modes: [Loop.Mode] { executor?.modes ?? [.common] }

    /// Queues a preferring task's job on the loop. Called by the runtime, from any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueueJob(UnownedJob(job), in: blockModes, on: executor, for: self)
    }

    /// The executor for the runtime. Does not retain it: a task keeps its preferred executor alive.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}

extension Loop {
    /// A task executor on this loop, in its common modes: pass it to `withTaskExecutorPreference(_:)` or
    /// `Task(executorPreference:)`. Any thread. Each call makes a new one: keep the value to reuse it (two of one
    /// loop run on the same thread, but a task moving from one preference to the other hops through the loop). A
    /// ``LoopThread`` keeps one: ``LoopThread/taskExecutor``.
    public var taskExecutor: LoopTaskExecutor { LoopTaskExecutor(loop: self, executor: nil) }
}

extension LoopExecutor {
    /// A task executor on this executor's loop, in its ``modes``. Any thread; each call makes a new one (see
    /// ``Loop/taskExecutor``).
    public var taskExecutor: LoopTaskExecutor { LoopTaskExecutor(loop: loop, executor: self) }
}
