import CRunLoopShims
import Glibc
import RunLoopKitSystem
import Synchronization

/// A run loop: one per thread, created on first use, that sleeps in `epoll_wait` until a source is signalled,
/// a descriptor is ready, a timer is due, a block arrives or it is stopped — CFRunLoop's model on Linux.
///
/// Threading contract:
/// - Running (``run()``, ``run(in:for:returnAfterSourceHandled:)``, ``runPass(in:)``) happens only on the loop's
///   own thread; anything else is a programming error and traps with a message saying so.
/// - ``stop()``, ``wakeUp()``, ``isWaiting``, ``currentMode``, `perform(in:_:)`, `add`, `remove`,
///   ``addCommonMode(_:)`` and the queries `contains(_:in:)`, ``commonModes`` and ``allModes`` (as CF answers them
///   under its loop lock; from another thread a consistent snapshot) are safe from any thread. Changes made from
///   another thread take effect on the loop's thread before its next pass, and a sleeping loop is woken to make them.
/// - Every callout (source, descriptor source, timer, observer, block, schedule and cancel handlers) runs on the
///   loop's thread with no RunLoopKit lock held, so it may call back into the loop, run it nested, or invalidate
///   anything, itself included.
///
/// When its thread exits, a loop removes every item from every mode (calling source cancel handlers on the
/// exiting thread) and releases it: the items stay valid and can be added to another loop, as in CF (a source
/// signalled meanwhile is performed there). It drops pending blocks unrun and closes its three descriptors. An actor
/// job still queued then, or enqueued later, traps (see ``enqueue(_:)``). The dead loop object itself (a few hundred
/// bytes, no descriptor) stays allocated while items that belonged to it are alive.
///
/// A loop is also a `SerialExecutor`: an actor whose `unownedExecutor` is the loop's runs on the loop's thread, its
/// jobs at the block points of passes in the common modes (see ``enqueue(_:)``).
public final class Loop: @unchecked Sendable {
    // Unchecked Sendable: the parts under "Loop thread only" are confined to the owning thread, which every entry
    // point checks or reaches through `inbox`; the parts above it are immutable, atomic or mutex-protected.

    // MARK: Parts any thread uses

    /// Who the loop is: its thread, whether it is the main loop, its serial number.
    let identity: Identity
    /// The epoll set, the wake-up eventfd and the timerfd, with the sleep side of the wake-up handshake.
    let poller: Poller
    /// Blocks, actor jobs and item changes sent by other threads, taken by the loop at its next pass.
    let inbox = Inbox()
    /// Sources signalled from any thread, not yet taken by the loop, and those taken, waiting to be performed.
    let signalStack = SignalStack()
    /// The lifecycle, the stop and wake-up requests and the settings: atomics any thread reads and sets.
    let control: Control
    /// What other threads may read of the modes: names, ids, common modes, the running mode, item counts.
    let publishedModes: Locked<PublishedModes>
    /// The loop's metrics: what ``metrics`` reads (written by the loop's thread), the loop thread's tally of its time,
    /// and the handler of every pass.
    let metricsKeeper: MetricsKeeper

    // MARK: Parts of the loop's thread only

    /// The modes and the common modes, with the items added to ``Mode/common``.
    @exclusivity(unchecked) var modeTable = ModeTable()
    /// ``Mode/default``, the mode of id 0, made with the loop. A `let`, so the paths that name the default mode (most
    /// adds, schedules and runs) reach it without a lookup, and without retaining it.
    let defaultMode = ModeState(name: .default, id: 0)
    /// The runs in progress, innermost first.
    @exclusivity(unchecked) var runStack = RunStack()
    /// Timers and one-shot callbacks.
    @exclusivity(unchecked) var timerTable = TimerTable()
    /// Descriptor sources in the epoll set, and those parked.
    @exclusivity(unchecked) var descriptorTable = DescriptorTable()
    /// Blocks and actor jobs waiting for a pass in one of their modes, oldest first.
    @exclusivity(unchecked) var blocks = BlockQueue()
    /// The main loop's service of Dispatch's main queue.
    @exclusivity(unchecked) var mainQueue = MainQueueService()
    /// Reusable arrays and buffers, so a pass allocates nothing in the steady state.
    @exclusivity(unchecked) var scratch = ScratchPools()

    /// Creates a loop with its three descriptors, and registers it for the `fork()` child handler (``ForkGuard``).
    /// - Throws: ``LoopError/Code/systemCallFailed`` when the epoll set, the eventfd or the timerfd cannot be made
    ///   (typically `EMFILE`: the process is out of descriptors), or when a million loops are alive already.
    ///
    /// `virtualClock`: the loop runs on that virtual time for good (``isVirtual``); `nil`, on `CLOCK_MONOTONIC`.
    private init(isMain: Bool, virtualClock: VirtualClock? = nil) throws(LoopError) {
        do {
            poller = try Poller()
        } catch {
            throw LoopError(error, context: "creating a loop's epoll set, eventfd and timerfd")
        }
        identity = Identity.next(isMain: isMain)
        // libdispatch must not be used in the child of a fork() (without exec): a main loop made there ignores it.
        control = Control(servesMainQueue: isMain && poller.forkGeneration == 0, virtualClock: virtualClock)
        metricsKeeper = MetricsKeeper(virtualClock: virtualClock)
        modeTable.insert(defaultMode)
        publishedModes = Locked(PublishedModes(commonCounts: modeTable.commonCounts))
        publishedModes.withLock { $0.created(.default, id: defaultMode.id, counts: defaultMode.counts) }
        guard identity.forkSlot >= 0 else {
            throw LoopError(
                .systemCallFailed, errno: ENOMEM,
                message: "creating a loop: \(LiveLoops.capacity) loops are alive already")
        }
        LiveLoops.publish(Unmanaged.passUnretained(self).toOpaque(), in: identity.forkSlot)
    }

    static func makeForCurrentThread() throws(LoopError) -> Loop { try Loop(isMain: false) }
    static func makeVirtual(_ clock: VirtualClock) throws(LoopError) -> Loop {
        try Loop(isMain: false, virtualClock: clock)
    }
    static func makeForMainThread() throws(LoopError) -> Loop { try Loop(isMain: true) }

    deinit {
        LiveLoops.remove(identity.forkSlot)  // First: a fork() from now on must not reach this loop.
        poller.close()
        scratch.deallocateEventBuffers()
    }

    // MARK: Getting loops

    /// The calling thread's loop, created on first use; the same object every time on that thread.
    ///
    /// Creating a loop needs three descriptors: if the process has none left, this traps with the reason (as CF's
    /// `CFRunLoopGetCurrent` has no way to fail). Code that must survive descriptor exhaustion uses
    /// ``forCurrentThread()``, which throws instead.
    public static var current: Loop {
        do {
            return try LoopRegistry.current()
        } catch {
            trap("RunLoopKit: cannot create the calling thread's loop: \(error)")
        }
    }

    /// The calling thread's loop, created on first use, like ``current``; throws instead of trapping when it cannot
    /// be created. Any thread (for itself).
    ///
    /// - Throws: ``LoopError/Code/systemCallFailed`` when the loop's epoll set, eventfd or timerfd cannot be made
    ///   (`EMFILE` or `ENFILE`: out of descriptors; ``LoopError/errno`` says which). A later call tries again.
    public static func forCurrentThread() throws(LoopError) -> Loop {
        try LoopRegistry.current()
    }

    /// The main thread's loop, reachable from any thread (created on first use).
    ///
    /// It serves Dispatch's main queue, and with it `@MainActor` work, in its common modes (``servesMainQueue``),
    /// as CF's main run loop does; by default that keeps its runs going until stopped (``mainQueueKeepsRunAlive``).
    public static var main: Loop { LoopRegistry.main() }

    /// Whether this is the main thread's loop. Safe from any thread.
    public var isMain: Bool { identity.isMain }

    /// Whether the calling thread owns this loop (and so may run it).
    public var isCurrent: Bool {
        @inline(__always) get {
            LoopRegistry.isCurrent(self)  // A load of the thread-local current loop (CurrentLoop.h) and a compare.
        }
    }

    // MARK: Any thread

    /// Whether the loop's thread has exited and the loop was torn down: its items were removed, and it accepts no
    /// item or block any more. Safe from any thread; once true, true for good.
    ///
    /// In the child of a `fork()`, every loop created before the fork (in the parent) is terminated from the start:
    /// its thread does not exist in the child, so it refuses work as a loop whose thread exited does. Its items stay
    /// bound to it (it was never torn down), so they cannot join the child's loops.
    public var isTerminated: Bool { control.lifecycle.load(ordering: .acquiring) != .alive }

    /// Whether the loop is asleep in `epoll_wait` (or about to be). Safe from any thread; may be stale at once.
    public var isWaiting: Bool { poller.isWaiting.load(ordering: .relaxed) }

    /// The mode of the innermost run in progress, `nil` when the loop is not running. Safe from any thread.
    public var currentMode: Mode? { publishedModes.withLock { $0.running } }

    /// Ends the innermost run in progress, which returns ``RunResult/stopped``. Safe from any thread.
    ///
    /// A stop sent while the loop is not running is forgotten, as in CF: the next run is not affected. A stop that
    /// arrives while a run is ending for another reason is dropped with that run, and does not reach an outer run. On
    /// a loop whose thread has exited it does nothing (``isTerminated`` tells).
    public func stop() {
        control.stopRequested.store(true, ordering: .sequentiallyConsistent)
        poller.wakeIfSleeping()
    }

    /// Makes the loop go round once more: a sleeping loop wakes, a loop about to sleep does not. Safe from any
    /// thread.
    ///
    /// Costs an atomic store and load when the loop is awake, and one eventfd write when it sleeps; wake-ups sent
    /// before the loop gets to run coalesce into one. A wake-up sent while the loop is not running is dropped,
    /// as in CF: the next run looks at everything anyway. On a loop whose thread has exited it does nothing. Signalling a source, posting a block and changing items
    /// from another thread wake the loop by themselves.
    public func wakeUp() {
        control.wakeRequested.store(true, ordering: .sequentiallyConsistent)
        poller.wakeIfSleeping()
    }

    /// Runs `change` on the loop's thread: now when called there, else before the loop's next pass (waking it).
    func onLoopThread(_ change: @escaping @Sendable () -> Void) {
        if isCurrent {
            change()
        } else {
            guard !isTerminated else { return }
            if inbox.post(change: change) == .queuedFirst { poller.wakeIfSleeping() }
        }
    }

    /// Runs `change(self, argument)` on the loop's thread: now when called there, else before the loop's next pass
    /// (waking it).
    ///
    /// For the item changes made on every add, remove and invalidation: pass a `change` that captures nothing and
    /// hand it what it needs as `argument`. Called on the loop's thread nothing is allocated then; only a change
    /// sent from another thread is wrapped in a closure for the inbox.
    ///
    /// On the loop's thread the call still packs `argument` and calls `change` through a function value, which
    /// copies (retains and releases) what the argument holds. The two calls on a timer's hottest path, `add` and
    /// invalidation, test ``isCurrent`` themselves and call their step directly: 122 instructions less per W4 pair
    /// (callgrind). The rarer changes go through here.
    @inline(__always)
    func onLoopThread<Argument: Sendable>(
        with argument: Argument,
        _ change: @escaping @Sendable (Loop, Argument) -> Void
    ) {
        if isCurrent {
            change(self, argument)
        } else {
            onLoopThread { [self] in change(self, argument) }
        }
    }

    /// Traps unless the caller is the loop's thread, naming the misused call.
    func preconditionOnLoopThread(_ call: StaticString = #function) {
        require(
            isCurrent,
            createdBeforeFork
                ? ForkGuard.message
                : "RunLoopKit: Loop.\(call) must be called on the loop's own thread (loop of "
                    + "\(ThreadIdentity.describe(identity.threadID)), called from "
                    + "\(ThreadIdentity.describe(ThreadIdentity.currentThreadID())))"
                    + offMainThreadHint
        )
    }

    /// For `Loop.main` called off the main thread: the usual cause (an async main, which Swift runs on a Dispatch
    /// worker) and its fixes. Empty for other loops.
    private var offMainThreadHint: String {
        guard isMain else { return "" }
        let inTask = withUnsafeCurrentTask { $0 != nil }
        return
            "; Loop.main belongs to the process's main thread"
            + (inTask
                ? ", and this call runs in a Swift task off it. A top-level `await` in main.swift (or an async "
                    + "`main()`) makes Swift run the program's main as a task on a Dispatch thread, not the main "
                    + "thread: link the RunLoopKitAsyncMain product, which has Loop.main serve the async main on the "
                    + "main thread with no run() call, or keep main.swift synchronous, start `Task { @MainActor in "
                    + "... }` and call Loop.main.run() at its end"
                : ": call it from the main thread, or post the work with Loop.main.perform { ... }")
    }

    func setRunningMode(_ mode: Mode?) {
        publishedModes.withLock { $0.running = mode }
    }

}
