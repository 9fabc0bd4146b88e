import CRunLoopShims
import Glibc
import Synchronization

/// A run loop: one per thread, created on first use, that sleeps in `epoll_wait` until a source is signalled,
/// a descriptor is ready, a timer is due, a block arrives or it is stopped — CFRunLoop's model on Linux.
///
/// Threading contract:
/// - Running (``run()``, ``run(in:for:returnAfterSourceHandled:)``, ``runPass(in:)``) happens only on the loop's
///   own thread; anything else is a programming error and traps with a message saying so.
/// - ``stop()``, ``wakeUp()``, ``isWaiting``, ``currentMode``, `perform(in:_:)`, `add`, `remove`,
///   ``addCommonMode(_:)`` and the queries `contains(_:in:)`, ``commonModes`` and ``allModes`` (as CF answers them
///   under its loop lock; from another thread a consistent snapshot) are safe from any thread. Changes made from another thread take effect on the loop's
///   thread before its next pass, and a sleeping loop is woken to make them.
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
/// jobs at the block points of passes in the common modes (Loop+Executor.swift).
public final class Loop: @unchecked Sendable {
    // Unchecked Sendable: everything below the "Loop thread only" mark is confined to the owning thread, which
    // every entry point checks or reaches through `inbox`; the rest is immutable, atomic or mutex-protected.

    let poller: Poller
    let inbox = Inbox()
    let signalStack = SignalStack()
    /// A stop for the innermost run; set from any thread, consumed by the run's exit check.
    let stopRequested = Atomic<Bool>(false)
    /// A wake-up asked for while the loop was awake: it makes the next sleep return at once.
    let wakeRequested = Atomic<Bool>(false)
    /// Set when the owning thread exited and the loop was torn down.
    let terminated = Atomic<Bool>(false)
    /// Set at the very end of the teardown, once every item was taken out and reset: items may join another loop.
    let itemsReleased = Atomic<Bool>(false)
    /// The innermost running mode, readable from any thread; written at run entry and exit only.
    private let runningMode = Locked<Mode?>(nil)
    /// The owning thread's kernel id, for descriptions.
    let threadID: pid_t
    /// Whether this is the main thread's loop.
    public let isMain: Bool
    /// The names of the loop's modes, for ``allModes``, ``commonModes`` and `contains` from any thread: updated on
    /// the loop's thread when a mode comes into being or turns common, and by `perform` when a block names a mode.
    let modeNames = Locked<ModeNames>(ModeNames())
    /// Whether the main loop drains Dispatch's main queue in its common modes (``servesMainQueue``).
    let mainQueueEnabled: Atomic<Bool>
    /// Whether serving the main queue keeps runs going (``mainQueueKeepsRunAlive``).
    let mainQueueKeepsAlive = Atomic<Bool>(true)
    /// Whether runs keep going when nothing keeps them alive (``keepsRunningWhenEmpty``).
    let runsWhenEmpty = Atomic<Bool>(false)
    /// A number no other loop of the process has, so a ``ScheduledCallback`` of one loop is ignored by another.
    let serial: UInt32
    private static let serials = Atomic<UInt32>(0)
    /// Ids of callbacks scheduled from other threads (their slot is only known once the loop's thread applied them).
    let remoteCallbackIDs = Atomic<UInt64>(0)

    // MARK: Loop thread only

    @exclusivity(unchecked) var modesByName: [Mode: ModeState] = [:]
    @exclusivity(unchecked) var modeList: [ModeState] = []
    @exclusivity(unchecked) var commonModeNames: Set<Mode> = [.default]
    /// Items added to the common pseudo-mode, copied into every common mode now and later.
    @exclusivity(unchecked) var commonItems: [ObjectIdentifier: AnyItem] = [:]
    @exclusivity(unchecked) var currentModeState: ModeState?
    @exclusivity(unchecked) var runDepth = 0
    /// The innermost run's deadline in monotonic nanoseconds (`Int64.max`: none).
    @exclusivity(unchecked) var runDeadline: Int64 = .max

    @exclusivity(unchecked) var timerHeap = TimerHeap()
    @exclusivity(unchecked) var nextTimerSequence: UInt64 = 0
    /// Timers that came due while none of their modes was running.
    @exclusivity(unchecked) var parkedTimers: [LoopTimer] = []
    /// One-shot callbacks (Loop+ScheduledCallback.swift).
    @exclusivity(unchecked) var callbackTimers = CallbackTimers()
    /// Callbacks scheduled from other threads, by id, while they wait to run.
    @exclusivity(unchecked) var remoteCallbacks: [UInt64: (slot: Int32, generation: UInt32)] = [:]
    /// Callbacks scheduled in ``Mode/common``: they keep every common mode's runs going.
    @exclusivity(unchecked) var commonCallbackCount = 0
    /// Descriptor sources in the epoll set, by descriptor.
    @exclusivity(unchecked) var registrations: [CInt: FileDescriptorSource] = [:]
    /// Descriptor sources taken out of the epoll set because they were ready while none of their modes ran.
    @exclusivity(unchecked) var parkedDescriptorSources: [FileDescriptorSource] = []
    /// Signalled sources not yet performed, sorted by order, then by signal arrival.
    @exclusivity(unchecked) var signalledSources: [LoopSource] = []
    /// Blocks waiting for a pass in one of their modes, oldest first.
    @exclusivity(unchecked) var blocks = BlockQueue()
    /// The main loop's service of Dispatch's main queue (Loop+MainQueue.swift).
    @exclusivity(unchecked) var mainQueue = MainQueueService()
    /// Whether an actor job of this loop is running: runs nested inside it run no other job (Loop+Executor.swift).
    @exclusivity(unchecked) var isRunningJob = false

    /// Reusable arrays, so a pass allocates nothing in the steady state (nested runs take their own).
    @exclusivity(unchecked) var spareBlockQueues: [BlockQueue] = []
    @exclusivity(unchecked) var changeArrays = ArrayPool<Inbox.Change>()
    @exclusivity(unchecked) var sourceArrays = ArrayPool<LoopSource>()
    @exclusivity(unchecked) var timerArrays = ArrayPool<LoopTimer>()
    @exclusivity(unchecked) var callbackArrays = ArrayPool<CallbackTimers.Entry>()
    @exclusivity(unchecked) var readyArrays = ArrayPool<(FileDescriptorSource, FileDescriptorSource.Events)>()
    /// One epoll event buffer per nesting depth.
    @exclusivity(unchecked) var eventBuffers: [UnsafeMutableBufferPointer<epoll_event>] = []
    static let eventBufferCapacity = 64

    /// Creates a loop with its three descriptors.
    /// - Throws: ``LoopError/Code/systemCallFailed`` when the epoll set, the eventfd or the timerfd cannot be made
    ///   (typically `EMFILE`: the process is out of descriptors).
    private init(isMain: Bool) throws(LoopError) {
        do {
            poller = try Poller()
        } catch {
            throw LoopError(error, context: "creating a loop's epoll set, eventfd and timerfd")
        }
        self.isMain = isMain
        self.serial = Self.serials.add(1, ordering: .relaxed).newValue
        // libdispatch must not be used in the child of a fork() (without exec): a main loop made there ignores it.
        self.mainQueueEnabled = Atomic(isMain && poller.forkGeneration == 0)
        self.threadID = isMain ? getpid() : ThreadIdentity.currentThreadID()
        _ = mode(named: .default)
    }

    static func makeForCurrentThread() throws(LoopError) -> Loop { try Loop(isMain: false) }
    static func makeForMainThread() throws(LoopError) -> Loop { try Loop(isMain: true) }

    deinit {
        poller.close()
        for buffer in eventBuffers { buffer.deallocate() }
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
            fatalError("RunLoopKit: cannot create the calling thread's loop: \(error)")
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
    public static var main: Loop { LoopRegistry.main() }

    /// Whether the calling thread owns this loop (and so may run it).
    public var isCurrent: Bool {
        LoopRegistry.isCurrent(self)  // A load of the thread-local current loop (CurrentLoop.h) and a compare.
    }

    // MARK: Any thread

    /// Whether the loop's thread has exited and the loop was torn down: its items were removed, and it accepts no
    /// item or block any more. Safe from any thread; once true, true for good.
    public var isTerminated: Bool { terminated.load(ordering: .acquiring) }

    /// Whether the loop is asleep in `epoll_wait` (or about to be). Safe from any thread; may be stale at once.
    public var isWaiting: Bool { poller.isWaiting.load(ordering: .relaxed) }

    /// The mode of the innermost run in progress, `nil` when the loop is not running. Safe from any thread.
    public var currentMode: Mode? { runningMode.withLock { $0 } }

    /// Ends the innermost run in progress, which returns ``RunResult/stopped``. Safe from any thread.
    ///
    /// A stop sent while the loop is not running is forgotten, as in CF: the next run is not affected. A stop that
    /// arrives while a run is ending for another reason is dropped with that run, and does not reach an outer run.
    public func stop() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        poller.wakeIfSleeping()
    }

    /// Makes the loop go round once more: a sleeping loop wakes, a loop about to sleep does not. Safe from any
    /// thread.
    ///
    /// Costs an atomic store and load when the loop is awake, and one eventfd write when it sleeps; wake-ups sent
    /// before the loop gets to run coalesce into one. A wake-up sent while the loop is not running is dropped,
    /// as in CF: the next run looks at everything anyway. Signalling a source, posting a block and changing items
    /// from another thread wake the loop by themselves.
    public func wakeUp() {
        wakeRequested.store(true, ordering: .sequentiallyConsistent)
        poller.wakeIfSleeping()
    }

    /// Queues `block` to run once on the loop's thread, at the next block point of a pass in `mode`.
    ///
    /// Safe from any thread. Blocks run in the order they were queued (per thread). A block for a mode that is not
    /// running waits for a pass in it; ``Mode/common`` matches every common mode. Unlike CF, a block queued from
    /// another thread wakes the loop if it sleeps.
    /// - Returns: `false` if the loop's thread has exited, so the block will never run.
    @discardableResult
    public func perform(in mode: Mode = .default, _ block: @escaping @Sendable () -> Void) -> Bool {
        post(PendingBlock(modes: blockModes(for: mode), closure: block))
    }

    /// Queues `block` to run once on the loop's thread, at the next block point of a pass in the default mode: the
    /// same as ``perform(in:_:)-(Mode,_)`` with ``Mode/default``. Safe from any thread.
    ///
    /// The call `loop.perform { … }` lands here: without a mode argument for the caller to build and release, it
    /// is the cheapest way to post.
    /// - Returns: `false` if the loop's thread has exited, so the block will never run.
    @discardableResult
    public func perform(_ block: @escaping @Sendable () -> Void) -> Bool {
        post(PendingBlock(modes: .defaultMode, closure: block))
    }

    /// Queues `block` to run once on the loop's thread, at the next block point of a pass in any of `modes`.
    ///
    /// See ``perform(in:_:)-(Mode,_)``. An empty `modes` list names no pass the block could run in: the block is
    /// dropped at once (not kept forever, never to run) and the call answers `false`.
    /// - Returns: `false` if `modes` is empty or the loop's thread has exited, so the block will never run.
    @discardableResult
    public func perform(in modes: [Mode], _ block: @escaping @Sendable () -> Void) -> Bool {
        guard !modes.isEmpty else { return false }
        for mode in modes where mode != .default && mode != .common {
            modeNames.withLock { names in names.noteNamedByBlock(mode) }
        }
        return post(PendingBlock(modes: BlockModes(modes), closure: block))
    }

    /// Queues a call of `function(argument)` on the loop's thread, at the next block point of a pass in the default
    /// mode; like ``perform(_:)`` in every other respect. Safe from any thread.
    ///
    /// The allocation-free way to post: a block is a Swift closure, whose captured values live in a context
    /// allocated on the posting thread and freed on the loop's (a third of the cost of a cross-thread post, and
    /// contended in malloc when many threads post); `function` is a C function pointer, which captures nothing (the
    /// compiler refuses a closure that would), and `argument` is one word the loop stores in the queue: an index
    /// into a table of yours, a count, or the bits of an `Unmanaged` reference. CF's version 0 sources and libuv's
    /// callbacks pass their data the same way.
    /// - Returns: `false` if the loop's thread has exited, so the call will never happen.
    @discardableResult
    public func perform(with argument: Int, _ function: @convention(c) (Int) -> Void) -> Bool {
        post(PendingBlock(modes: .defaultMode, call: FunctionCall(function: function, argument: argument)))
    }

    /// Queues a call of `function(argument)` for a pass in `mode` (or any common mode, for ``Mode/common``); see
    /// ``perform(with:_:)``. Safe from any thread.
    /// - Returns: `false` if the loop's thread has exited, so the call will never happen.
    @discardableResult
    public func perform(in mode: Mode, with argument: Int, _ function: @convention(c) (Int) -> Void) -> Bool {
        post(PendingBlock(modes: blockModes(for: mode), call: FunctionCall(function: function, argument: argument)))
    }

    /// The modes of a block queued for `mode`.
    @inline(__always)
    private func blockModes(for mode: Mode) -> BlockModes {
        if mode == .default { return .defaultMode }
        if mode == .common { return .commonModes }
        return .named(blockModeList(naming: mode))
    }

    /// Records that a block named `mode` (neither the default nor the common mode), so ``allModes`` lists it from
    /// now on (as CF creates a block's modes), and answers the one-element list such blocks hold, made once per
    /// mode so that queueing allocates nothing.
    private func blockModeList(naming mode: Mode) -> [Mode] {
        modeNames.withLock { names in names.blockModeList(naming: mode) }
    }

    @inline(__always)
    private func post(_ block: consuming PendingBlock) -> Bool {
        if terminated.load(ordering: .acquiring) { return false }
        if isCurrent {
            blocks.append(block, pool: inbox.segments)
            return true
        }
        switch inbox.post(block, isClosureBlock: true) {
        case .refused:  // The thread is exiting, or its LoopThread is stopping (``refuseBlocksFromOtherThreads()``).
            return false
        case .queuedFirst:
            poller.wakeIfSleeping()
            return true
        case .queuedBehind:  // The post that found the inbox empty wakes the loop for the whole batch.
            return true
        }
    }

    /// Runs `change` on the loop's thread: now when called there, else before the loop's next pass (waking it).
    func onLoopThread(_ change: @escaping @Sendable () -> Void) {
        if isCurrent {
            change()
        } else {
            guard !terminated.load(ordering: .acquiring) else { return }
            if inbox.post(change: change) == .queuedFirst { poller.wakeIfSleeping() }
        }
    }

    /// Runs `change(self, argument)` on the loop's thread: now when called there, else before the loop's next pass
    /// (waking it).
    ///
    /// For the item changes made on every add, remove and invalidation: pass a `change` that captures nothing and
    /// hand it what it needs as `argument`. Called on the loop's thread nothing is allocated then; only a change
    /// sent from another thread is wrapped in a closure for the inbox.
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
        precondition(
            isCurrent,
            createdBeforeFork
                ? ForkGuard.message
                : "RunLoopKit: Loop.\(call) must be called on the loop's own thread (loop of "
                    + "\(ThreadIdentity.describe(threadID)), called from "
                    + "\(ThreadIdentity.describe(ThreadIdentity.currentThreadID())))"
        )
    }

    func setRunningMode(_ mode: Mode?) {
        runningMode.withLock { $0 = mode }
    }

    /// The state of the mode named `name`, created on first use. Loop thread only.
    func mode(named name: Mode) -> ModeState {
        if let state = existingMode(named: name) { return state }
        return makeMode(named: name)
    }

    /// Creates the mode named `name` (rare: kept out of line, so the lookup above stays small enough to inline).
    @inline(never)
    private func makeMode(named name: Mode) -> ModeState {
        let state = ModeState(name: name, id: modeList.count)
        state.isCommon = commonModeNames.contains(name)
        modesByName[name] = state
        modeList.append(state)
        modeNames.withLock { $0.created(name, id: state.id) }
        return state
    }

    /// The state of the mode named `name` if it exists. Loop thread only.
    ///
    /// Loops usually have a handful of modes, and comparing a few short names costs less than hashing one, so the
    /// dictionary is only used past eight modes.
    func existingMode(named name: Mode) -> ModeState? {
        guard modeList.count > 8 else { return modeList.first { $0.name == name } }
        return modesByName[name]
    }
}

/// A stack of emptied arrays kept for reuse, so hot paths do not allocate once warmed up.
struct ArrayPool<Element> {
    private var free: [[Element]] = []

    mutating func take() -> [Element] {
        free.popLast() ?? []
    }

    mutating func give(_ array: inout [Element]) {
        array.removeAll(keepingCapacity: true)
        free.append(array)
        array = []
    }
}
