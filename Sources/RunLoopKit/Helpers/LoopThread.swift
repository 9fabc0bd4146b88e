import Glibc
import RunLoopKitSystem
import Synchronization

/// A named thread that runs its own loop until stopped: CF's keep-alive worker thread (a port in the mode and
/// `CFRunLoopRun()`), ready for blocks, sources, timers and descriptor sources.
///
/// The worker sleeps in `epoll_wait` whenever it has nothing to do; a private source that only ``stop()``
/// signals keeps its default mode from being empty, so it never busy-waits and never exits on its own.
///
/// Threading: every method is safe from any thread, the worker's own included. Work runs on the worker, in the
/// order it was submitted (per submitting thread, as for ``Loop/perform(in:_:file:line:)-(Mode,_,_,_)``).
///
/// Stopping: blocks already accepted when ``stop()`` begins still run, each in a pass of a mode it was queued
/// for; then the thread exits. Work submitted once the stop began is refused, never dropped silently: `perform`
/// answers `false` (as ``Loop/perform(in:_:file:line:)-(Mode,_,_,_)`` does for a loop whose thread exited), and the calls that wait for a
/// result (`performAndWait`, `run`) throw ``LoopError/Code/threadStopped``. Dropping the last reference stops and
/// joins the thread too.
///
/// After `fork()`: the child has no copy of the worker thread, so in the child a `LoopThread` made before the fork
/// is stopped (``isStopped`` answers `true`): `perform` answers `false`, `performAndWait` and `run` throw
/// ``LoopError/Code/threadStopped``, and ``stop()`` and dropping the last reference return at once, without joining
/// a thread that does not exist there or touching the parent's loop. Its ``loop`` is ``Loop/isTerminated``.
///
/// Actors: an actor whose `unownedExecutor` is `loop.asUnownedSerialExecutor()` (or a ``LoopExecutor`` of the
/// loop) runs on the worker. Its jobs queued before the thread exits run in the drain at stop, as blocks do; a job
/// that arrives after the thread exited traps (it cannot run on the actor's thread, and must not run elsewhere).
public final class LoopThread: Sendable {
    /// The name given at creation; the thread itself carries its first 15 bytes (the kernel's limit).
    public let name: String
    /// The worker's loop. Add sources, timers, observers and descriptor sources to it from any thread.
    ///
    /// The worker runs the ``Loop/Mode/default`` mode; items in other modes are served only while something runs
    /// those modes nested on the worker.
    public let loop: Loop
    /// The worker's kernel thread id (as `gettid(2)` would say), 0 if `/proc` is not mounted.
    public let threadID: pid_t
    /// The options the thread was made with, as applied: the stack size rounded up to whole pages. Safe from any
    /// thread.
    public let options: Options
    /// The worker loop's task executor, made once: `withTaskExecutorPreference(thread.taskExecutor) { … }` runs
    /// nonisolated async code on the worker (see ``LoopTaskExecutor``). Safe from any thread.
    public let taskExecutor: LoopTaskExecutor

    /// Internal (not private) so the fork tests can tell whether a stop ran in a child of `fork()`.
    let worker: Worker
    /// The pthread and whether it has been joined or detached. The mutex is held while joining, so concurrent
    /// ``stop()`` calls all return after the thread exited.
    /// Internal (not private) so the fork tests can tell whether a child of `fork()` joined the thread.
    let handle: Locked<Handle>

    struct Handle {
        let thread: pthread_t
        var released = false
    }

    /// Starts the worker thread and returns once its loop exists and is ready for work. Any thread.
    ///
    /// The thread is made with `options` (see ``Options``): its stack size, CPU affinity and scheduling are set
    /// through its `pthread_attr_t`, so it is born with them (`SCHED_BATCH` and `SCHED_IDLE`, which glibc's
    /// attributes do not carry, the thread sets on itself before it makes its loop). The defaults make it as
    /// before: the C library's stack size (glibc: `RLIMIT_STACK`, usually 8 MiB), and the creating thread's CPU
    /// affinity and scheduling, inherited.
    ///
    /// When it throws, nothing was made: no thread runs, no loop exists, no descriptor is open.
    ///
    /// - Parameters:
    ///   - name: The thread's name, for `top -H`, `ps -L` and debuggers; cut to 15 bytes for the kernel.
    ///   - options: The stack size, CPU affinity and scheduling policy; the default keeps each as it always was.
    /// - Throws: ``LoopError/Code/invalidArgument`` for options outside their range (checked before anything is
    ///   made; the message names the value and the range) or refused by the kernel (`EINVAL`: say, no CPU of the
    ///   affinity is one the process may use); ``LoopError/Code/schedulingNotPermitted`` when the kernel refuses
    ///   the scheduling policy (`EPERM`: a real-time policy without `CAP_SYS_NICE` or `RLIMIT_RTPRIO`);
    ///   ``LoopError/Code/systemCallFailed`` when `pthread_create(3)` fails otherwise (`EAGAIN`: out of threads, or
    ///   of memory for the stack), or when the new thread cannot create its loop because the process is out of
    ///   descriptors (`EMFILE`; the error is in ``LoopError/errno``). The process keeps running, and a later
    ///   `LoopThread` starts normally once descriptors are free again.
    public init(name: String = "RunLoopKit.LoopThread", options: Options = Options()) throws(LoopError) {
        let options = try options.validated(for: name)
        let worker = Worker()
        let startup = Startup(worker: worker, name: name, options: options)
        let context = Unmanaged.passRetained(startup).toOpaque()
        let thread: pthread_t
        do {
            thread = try ThreadCalls.start(
                { pointer in
                    let startup = Unmanaged<Startup>.fromOpaque(pointer!).takeRetainedValue()
                    LoopThread.body(startup)
                    return nil
                }, with: context, attributes: options.attributes)
        } catch {
            Unmanaged<Startup>.fromOpaque(context).release()
            throw options.error(error, startingThread: name)
        }
        startup.ready.wait()
        if let failure = startup.failure {
            // The thread is ours, joinable and not this one: the join cannot fail (as below, nothing to do if it did).
            try? ThreadCalls.join(thread)
            throw failure
        }
        self.name = name
        self.worker = worker
        self.loop = startup.loop!
        self.taskExecutor = startup.loop!.taskExecutor
        self.threadID = startup.threadID
        self.options = options
        self.handle = Locked(Handle(thread: thread))
    }

    deinit {
        // A child of fork(): the thread is the parent's (there is none here to stop or join).
        guard !loop.createdBeforeFork else { return }
        worker.requestStop()
        handle.withLock { handle in
            guard !handle.released else { return }
            handle.released = true
            // The last reference may go away on the worker itself (in a block it runs): it cannot join itself.
            if loop.isCurrent { try? ThreadCalls.detach(handle.thread) } else { try? ThreadCalls.join(handle.thread) }
        }
    }

    /// Whether ``stop()`` has begun: from then on, submitted work is rejected. Safe from any thread.
    ///
    /// Also `true` in the child of a `fork()` for a `LoopThread` made before the fork: its thread does not exist
    /// there.
    public var isStopped: Bool { worker.isStopping || loop.createdBeforeFork }

    /// Queues `work` to run once on the worker, at the next block point of a pass in `mode`. Safe from any thread.
    ///
    /// - Parameters:
    ///   - mode: The mode whose pass runs the block. The worker runs ``Loop/Mode/default``, so blocks for other
    ///     modes wait for a nested run of their mode (or for the drain at stop).
    ///   - work: The block; it runs on the worker's thread.
    ///   - file: Where the work is queued, for the flight recorder (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``);
    ///     leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Returns: `false` once ``stop()`` has begun (or in the child of a `fork()`, see ``isStopped``): the block was
    ///   refused and will never run. `true`: it runs exactly once.
    @inlinable @discardableResult
    public func perform(
        in mode: Loop.Mode = .default, _ work: @escaping @Sendable () -> Void, file: StaticString = #fileID,
        line: UInt = #line
    ) -> Bool {
        // Inlined where it is called, so `worker.perform { … }` is known at compile time to need no mode.
        mode.name == Loop.Mode.default.name
            ? admitToDefaultMode(work, file: file, line: line) : admit(work, in: mode, file: file, line: line)
    }

    /// ``perform(in:_:file:line:)-(Loop.Mode,_,_,_)`` in the default mode.
    @usableFromInline
    func admitToDefaultMode(_ work: @escaping @Sendable () -> Void, file: StaticString, line: UInt) -> Bool {
        !worker.isStopping && loop.perform(work, file: file, line: line)
    }

    /// ``perform(in:_:file:line:)-(Loop.Mode,_,_,_)`` in another mode.
    @usableFromInline
    func admit(_ work: @escaping @Sendable () -> Void, in mode: Loop.Mode, file: StaticString, line: UInt) -> Bool {
        !worker.isStopping && loop.perform(in: mode, work, file: file, line: line)
    }

    /// Queues a call of `function(argument)` on the worker, at the next block point of a pass in the default mode:
    /// the allocation-free post (``Loop/perform(in:with:_:file:line:)``: a C function pointer that captures nothing, and one word
    /// of data). Safe from any thread.
    ///
    /// - Parameters:
    ///   - argument: The word `function` is called with.
    ///   - function: The function to call.
    ///   - file: Where the work is queued, for the flight recorder (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``);
    ///     leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Returns: `false` once ``stop()`` has begun (or in the child of a `fork()`, see ``isStopped``): the call was
    ///   refused and will never happen.
    @discardableResult
    public func perform(
        with argument: Int, _ function: @convention(c) (Int) -> Void, file: StaticString = #fileID, line: UInt = #line
    ) -> Bool {
        !worker.isStopping && loop.perform(with: argument, function, file: file, line: line)
    }

    /// Queues `work` to run once on the worker, at the next block point of a pass in any of `modes`: use it for
    /// work that must also run while a block of the worker runs the loop nested in another mode (say
    /// `[.default, "tracking"]`). Safe from any thread.
    ///
    /// - Parameters:
    ///   - modes: The modes whose passes may run the block; ``Loop/Mode/common`` stands for every common mode.
    ///     The drain at stop runs it in the default mode if it names it (or `.common`), else in its first mode by
    ///     name.
    ///   - work: The block; it runs on the worker's thread.
    ///   - file: Where the work is queued, for the flight recorder (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``);
    ///     leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    /// - Returns: `false` when `modes` is empty (a block for no mode could never run) or once ``stop()`` has
    ///   begun (or in the child of a `fork()`, see ``isStopped``): the block was refused and will never run.
    @discardableResult
    public func perform(
        in modes: [Loop.Mode], _ work: @escaping @Sendable () -> Void, file: StaticString = #fileID,
        line: UInt = #line
    ) -> Bool {
        guard !worker.isStopping, !modes.isEmpty else { return false }
        // One mode keeps the core's single-mode fast path (no array to search in each pass).
        return modes.count == 1
            ? loop.perform(in: modes[0], work, file: file, line: line)
            : loop.perform(in: modes, work, file: file, line: line)
    }

    /// Runs `work` on the worker and waits for it, returning its value or rethrowing its error.
    ///
    /// Called on the worker itself, it runs `work` at once instead of deadlocking. Safe from any thread.
    /// - Parameters:
    ///   - mode: The mode whose pass runs the block (ignored when called on the worker).
    ///   - work: The block; it runs on the worker's thread.
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw, or ``LoopError/Code/threadStopped`` (before `work` ran) once ``stop()`` has
    ///   begun, or in the child of a `fork()` for a `LoopThread` made before it (see ``isStopped``).
    @discardableResult
    public func performAndWait<T: Sendable>(
        in mode: Loop.Mode = .default,
        _ work: @escaping @Sendable () throws -> T
    ) throws -> T {
        try performAndWait(in: [mode], work)
    }

    /// Runs `work` on the worker in a pass of any of `modes` and waits for it, returning its value or rethrowing
    /// its error: use it to call into the worker while one of its blocks may be running the loop nested in
    /// another mode. Safe from any thread.
    ///
    /// Called on the worker itself, it runs `work` at once instead of deadlocking.
    /// - Parameters:
    ///   - modes: The modes whose passes may run the block (ignored when called on the worker, but still checked);
    ///     ``Loop/Mode/common`` stands for every common mode.
    ///   - work: The block; it runs on the worker's thread.
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw; ``LoopError/Code/invalidArgument`` when `modes` is empty, or
    ///   ``LoopError/Code/threadStopped`` once ``stop()`` has begun or in the child of a `fork()` (see
    ///   ``isStopped``), both before `work` ran.
    @discardableResult
    public func performAndWait<T: Sendable>(
        in modes: [Loop.Mode],
        _ work: @escaping @Sendable () throws -> T
    ) throws -> T {
        if loop.isCurrent {
            try LoopThread.requireModes(modes)
            guard !worker.isStopping else { throw stoppedError() }
            return try work()
        }
        try LoopThread.requireModes(modes)
        let outcome = Outcome<T>()
        guard worker.admit({ outcome.finish(Result { try work() }) }, in: modes, on: loop) else {
            throw stoppedError()
        }
        return try outcome.wait().get()
    }

    /// Stops the worker: closes it to new work, lets it finish the blocks already accepted, and joins the thread.
    ///
    /// Idempotent and safe from any thread. From another thread it returns once the thread has exited. From the
    /// worker itself (a block it runs) it only begins the stop: the thread exits after the current callout and the
    /// drain, and is joined when the ``LoopThread`` is released. A block that runs the loop nested in another mode
    /// delays the stop until that nested run returns. In the child of a `fork()`, for a `LoopThread` made before it,
    /// it returns at once: the thread is the parent's, and ``isStopped`` is already `true`.
    public func stop() {
        guard !loop.createdBeforeFork else { return }  // No thread here to stop or join; the parent's loop untouched.
        worker.requestStop()
        guard !loop.isCurrent else { return }
        handle.withLock { handle in
            guard !handle.released else { return }
            try? ThreadCalls.join(handle.thread)
            handle.released = true
        }
    }
}

extension LoopThread {
    /// One result handed from the worker to the thread waiting in
    /// ``LoopThread/performAndWait(in:_:)-([Loop.Mode],_)``.
    final class Outcome<T: Sendable>: Sendable {
        private let result = Locked<Result<T, any Error>?>(nil)
        private let done = Semaphore()

        func finish(_ value: sending Result<T, any Error>) {
            result.withLock { $0 = value }
            done.post()
        }

        func wait() -> Result<T, any Error> {
            done.wait()
            return result.withLock { $0! }
        }
    }
}
