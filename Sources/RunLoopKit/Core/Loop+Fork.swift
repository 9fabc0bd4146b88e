import CRunLoopShims
import Glibc
import Synchronization

/// What `fork()` does to loops: the child gets copies of the parent's loops, whose epoll set, eventfd and timerfd
/// are the parent's own kernel objects. Running or waking one of them in the child would steal the parent's
/// events or wake the parent's thread, so the child must never use them.
///
/// A `pthread_atfork` child handler, installed when the first loop is created, bumps a process generation and
/// forgets the forking thread's loop. Every loop records the generation it was made in; in the child, older
/// loops cannot be run (that traps, saying "loop created before fork()"), their wake-ups do nothing, they are
/// ``Loop/isTerminated``, they refuse blocks, item changes and callbacks as a loop whose thread exited does (adding
/// to them throws `loopTerminated`, an actor job for them traps), and ``Loop/current`` and ``Loop/main`` hand out
/// fresh loops. A ``LoopThread`` made before the fork is stopped in the child. Nothing in the child takes a lock of
/// a parent's loop (a parent thread may have held it at the fork, for good in the child) or calls `epoll_ctl` on
/// its epoll set (the parent's own, shared through the inherited descriptor).
///
/// Cost: nothing on the loop thread's paths. A run's entry does one relaxed atomic load; a wake-up does one only
/// when it is about to write the eventfd anyway; a post from another thread (block, job, item change) does one
/// before taking the inbox's lock, and the first one that finds a parent's loop marks its lifecycle, so later posts
/// stop at the lifecycle check they make anyway.
enum ForkGuard {
    /// Bumped in every child of `fork()`, in the child only.
    static let generation = Atomic<UInt64>(0)

    /// Installs the child handler once per process (the first time a loop is created).
    private static let installed: Bool = {
        _ = LoopRegistry.key  // Created now, so the child handler never runs its one-time initialiser.
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

    /// The child handler: runs in the child, on its only thread, before `fork()` returns there. Touches only an
    /// atomic and the thread's own slot (no locks, no allocation).
    private static func childAfterFork() {
        generation.wrappingAdd(1, ordering: .relaxed)
        // The slot still holds the parent thread's loop: forget it (the reference is leaked on purpose, so the
        // parent's loop object is never torn down in the child), so ``Loop/current`` makes a fresh loop.
        _ = pthread_setspecific(LoopRegistry.key, nil)
        crunloop_set_current_loop(nil)
    }

    /// The trap message for using a parent's loop in a child.
    static let message =
        "RunLoopKit: loop created before fork() cannot be used in the child process; "
        + "the child gets fresh loops from Loop.current and Loop.main"
}

extension Loop {
    /// Whether the loop was created in an ancestor of this process (before a `fork()`), so it must not be used.
    @inline(__always)
    var createdBeforeFork: Bool { ForkGuard.isStale(poller.forkGeneration) }

    /// The slow path of a post from another thread that found the loop made before `fork()`: no thread of this
    /// process will ever run it, so it moves to ``Lifecycle/tearingDown`` for good (never ``Lifecycle/released``:
    /// its items were not torn down, so they must not join another loop). Later posts then stop at the lifecycle
    /// check. Touches only the lifecycle atomic, no lock. Any thread of the child.
    @inline(never)
    func markTerminatedInForkChild() {
        _ = control.lifecycle.compareExchange(expected: .alive, desired: .tearingDown, ordering: .acquiringAndReleasing)
    }
}
