import CRunLoopShims
import Glibc
import RunLoopKitSystem
import Synchronization

/// What `fork()` does to loops: the child gets copies of the parent's loops, whose epoll set, eventfd and timerfd
/// are the parent's own kernel objects. Running or waking one of them in the child would steal the parent's
/// events or wake the parent's thread, so the child must never use them.
///
/// A `pthread_atfork` child handler, installed when the first loop is created, bumps a process generation, forgets
/// the forking thread's loop, and marks every loop of the parent terminated (``Loop/Lifecycle/tearingDown``, for
/// good: no thread of the child will ever run them, nor tear them down). Every loop records the generation it was
/// made in; in the child, older loops:
/// - cannot be run (that traps, saying "loop created before fork()"), and their loop-thread calls trap the same way;
/// - are ``Loop/isTerminated``, so they refuse work as a loop whose thread exited does, through the lifecycle check
///   every post, add and schedule makes anyway before taking a lock: blocks and item changes are refused, adding
///   and scheduling throw `loopTerminated`, an actor job traps;
/// - never write the parent's eventfd nor change its epoll set (shared with the parent through the inherited
///   descriptor), and never wait for their poller's lock, which a parent thread may have held at the fork.
///
/// ``Loop/current`` and ``Loop/main`` hand out fresh loops; a ``LoopThread`` made before the fork is stopped.
///
/// Cost: nothing on the hot paths. Loops reach the handler through a lock-free table (``LiveLoops``) that a loop
/// joins when made and leaves when freed. A run's entry does one relaxed atomic load; a wake-up, a registration in the
/// epoll set and a removal from it do one only on their slow paths (about to make the system call anyway).
enum ForkGuard {
    /// Bumped in every child of `fork()`, in the child only.
    static let generation = Atomic<UInt64>(0)

    /// Installs the child handler once per process (the first time a loop is created).
    private static let installed: Bool = {
        _ = LoopRegistry.key  // Created now, so the child handler never runs its one-time initialiser.
        _ = LiveLoops.chunks  // The same.
        // The one generic type the handler names, instantiated now: in the child, filling the runtime's metadata cache
        // could wait for good on its lock, if a parent thread held it at the fork (unoptimised builds look it up).
        _ = Unmanaged<Loop>.self
        let status = pthread_atfork(nil, nil) { ForkGuard.childAfterFork() }
        require(status == 0, "RunLoopKit: pthread_atfork failed (\(status))")
        return true
    }()

    /// The generation a loop created now belongs to; installs the child handler first.
    static func generationForNewLoop() -> UInt64 {
        _ = installed
        return generation.load(ordering: .relaxed)
    }

    /// Whether an object made in `loopGeneration` belongs to an ancestor process.
    @inline(__always)
    static func isStale(_ loopGeneration: UInt64) -> Bool {
        loopGeneration != generation.load(ordering: .relaxed)
    }

    /// The child handler: runs in the child, on its only thread, before `fork()` returns there. Touches only
    /// atomics, the thread's own slot and the table of live loops (no locks, no allocation, no retain or release).
    private static func childAfterFork() {
        generation.wrappingAdd(1, ordering: .relaxed)
        // The slot still holds the parent thread's loop: forget it (the reference is leaked on purpose, so the
        // parent's loop object is never torn down in the child), so ``Loop/current`` makes a fresh loop.
        _ = pthread_setspecific(LoopRegistry.key, nil)
        crunloop_set_current_loop(nil)
        // Every loop alive at the fork is the parent's: none of them has a thread here.
        LiveLoops.forEach { address in
            Unmanaged<Loop>.fromOpaque(address)._withUnsafeGuaranteedRef { $0.markCreatedBeforeFork() }
        }
    }

    /// The trap message for using a parent's loop in a child.
    static let message =
        "RunLoopKit: loop created before fork() cannot be used in the child process; "
        + "the child gets fresh loops from Loop.current and Loop.main"
}

extension Loop {
    /// Whether the loop was created in an ancestor of this process (before a `fork()`), so it must not be used.
    var createdBeforeFork: Bool { ForkGuard.isStale(poller.forkGeneration) }

    /// In a `fork()` child, from the child handler: the loop is the parent's, and no thread here will run it, so
    /// it is terminated for good. ``Lifecycle/tearingDown``, never ``Lifecycle/released``: its items were not taken
    /// out, so they must not join another loop. A loop already past ``Lifecycle/alive`` keeps its state.
    fileprivate func markCreatedBeforeFork() {
        _ = control.lifecycle.compareExchange(expected: .alive, desired: .tearingDown, ordering: .relaxed)
    }

    /// The error of an add or a schedule that a terminated loop refuses, saying why it is terminated.
    var terminatedLoopError: LoopError {
        createdBeforeFork
            ? LoopError(.loopTerminated, message: "the loop was created before fork(); use the child's own loop")
            : LoopError(.loopTerminated, message: "the loop's thread has exited")
    }
}
