/// The task-executor side of a loop (or of a ``LoopExecutor``): the object the runtime hands jobs of tasks that
/// prefer the loop. Those jobs are queued like actor jobs, but marked, so the loop runs them with the loop as their
/// task executor as well as their serial executor.
///
/// A separate object because `SerialExecutor` and `TaskExecutor` share one `enqueue` requirement: were the loop
/// itself the task executor, its `enqueue` could not tell a task's job from an actor's, and running every actor
/// job with a task executor keeps the runtime from handing callers' continuations back without a hop (a 16-task
/// actor fan-in ran at 13 M calls/s that way, 81 M/s this way).
///
/// Threading: attached once by its owner's initialiser, before the owner is shared; `enqueue` from any thread.
final class TaskJobIntake: TaskExecutor, @unchecked Sendable {
    // Unchecked Sendable: the three fields are written once, by `attach`, before any other thread can see the object.

    /// The loop whose thread runs the jobs; it owns this object.
    private unowned(unsafe) var loop: Loop? = nil
    /// The loop executor this is the task side of, or `nil` for the loop itself.
    private unowned(unsafe) var executor: LoopExecutor? = nil
    private var modes = BlockModes.commonModes

    init() {}

    /// Binds the intake to its owner: `loop`, and `executor` when the owner is a ``LoopExecutor``.
    func attach(to loop: Loop, executor: LoopExecutor?, modes: BlockModes) {
        self.loop = loop
        self.executor = executor
        self.modes = modes
    }

    /// Queues a preferring task's job on the loop (see ``Loop/enqueue(_:)`` for the costs and the dead-loop trap).
    func enqueue(_ job: consuming ExecutorJob) {
        loop!.enqueueJob(UnownedJob(job), in: modes, on: executor, asTask: true)
    }
}
