import RunLoopKitSystem
import Synchronization

/// Which modes a block may run in.
///
/// The default mode and the common modes, which nearly every block and job names, have cases of their own: such
/// a block holds nothing for its modes, and a pass matches it with one flag of the running mode instead of
/// comparing names. Other modes are held as a list (one reference: dropping a block releases at most that), which
/// the loop makes once per single mode (``Loop/perform(in:_:file:line:)-(Mode,_,_,_)``) or takes from the caller.
enum BlockModes: Sendable {
    /// ``Loop/Mode/default``.
    case defaultMode
    /// ``Loop/Mode/common``: every common mode.
    case commonModes
    /// Any other modes (one or more; may include the two above when there are several).
    case named([Loop.Mode])

    /// The modes of a block queued for `modes`, which must not be empty: the list itself unless it is only the
    /// default or the common mode.
    init(_ modes: [Loop.Mode]) {
        if modes.count == 1 && modes[0] == .default {
            self = .defaultMode
        } else if modes.count == 1 && modes[0] == .common {
            self = .commonModes
        } else {
            self = .named(modes)
        }
    }

    /// Whether `mode` is among the modes, by name (``Loop/Mode/common`` only when named itself).
    func names(_ mode: Loop.Mode) -> Bool {
        switch self {
        case .defaultMode: mode == .default
        case .commonModes: mode == .common
        case .named(let list): list.contains(mode)
        }
    }
}

/// A job as the runtime made it (an actor's, or a task's that prefers the loop as its task executor), with the
/// executor it was enqueued on. Trivially copyable: queueing it allocates nothing and copying it retains nothing.
struct QueuedJob {
    let job: UnownedJob
    /// The ``LoopExecutor`` the job was enqueued on, or `nil` for the loop itself. Unowned, as the runtime's own
    /// executor references are: whoever enqueues on an executor keeps it alive (see ``LoopExecutor``).
    unowned(unsafe) let executor: LoopExecutor?
    /// The ``LoopTaskExecutor`` the job came through (a job of a task that prefers it), or `nil` for an actor's job.
    /// Unowned: a task keeps its preferred executor alive.
    unowned(unsafe) let taskExecutor: LoopTaskExecutor?
}

/// A C function and the word it is called with: a block from ``Loop/perform(in:with:_:file:line:)``. Trivially copyable: it has
/// no context to allocate or count.
struct FunctionCall {
    let function: @convention(c) (Int) -> Void
    let argument: Int
    /// Where it was queued, for the flight recorder: a third word, still no larger than a job.
    let site: CallSite
}

/// What a block runs: its closure (with where it was queued), an actor's job, or a function call. Plain words
/// all three, at most three of them (a job), so the enum is trivially copyable and the call site of a closure block
/// costs the block no room: it lies where a job's words would.
enum BlockWork {
    case closure(CallSite)
    case job(QueuedJob)
    case call(FunctionCall)
}

/// A block waiting for a pass in one of its modes: a closure from ``Loop/perform(in:_:file:line:)-(Mode,_,_,_)``
/// (`work` is `.closure`, with its call site), or (then `closure` is an empty closure without context, never
/// called) an actor's job or a function call from ``Loop/perform(in:with:_:file:line:)``.
///
/// Not one enum of all three: copying a block costs a plain retain of the closure's context and a copy of plain
/// words, without outlined switches over cases. The hot paths move blocks rather than copy them.
///
/// Room: 8 bytes of modes, 16 of closure, 25 of work (three words and the enum's tag), padded to a stride of 56.
/// `postedAt` takes 4 of the 7 padding bytes, so it costs a block no room: keep it last and 32 bits wide.
struct PendingBlock {
    let modes: BlockModes
    let closure: @Sendable () -> Void
    let work: BlockWork
    /// When it was posted, for hand-over latencies (``Loop/handOverStamp()``); 0 when not stamped.
    var postedAt: UInt32 = 0

    init(modes: BlockModes, closure: @escaping @Sendable () -> Void, site: CallSite = .unknown) {
        self.modes = modes
        self.closure = closure
        self.work = .closure(site)
    }

    init(modes: BlockModes, job: QueuedJob) {
        self.modes = modes
        self.closure = PendingBlock.noClosure
        self.work = .job(job)
    }

    init(modes: BlockModes, call: FunctionCall) {
        self.modes = modes
        self.closure = PendingBlock.noClosure
        self.work = .call(call)
    }

    /// The actor's job, if the block is one.
    var job: QueuedJob? {
        if case .job(let job) = work { job } else { nil }
    }

    /// The closure of a job's or a call's block: it captures nothing, so storing and copying it retains nothing.
    private static let noClosure: @Sendable () -> Void = {}
}

/// Work other threads hand to a loop: blocks and jobs, and changes to the loop's items (applied on its thread).
///
/// Threading: ``post(_:isClosureBlock:stamp:)`` and ``post(change:)`` from any thread; ``takeAll(into:)``,
/// ``refuseBlocks(into:)`` and ``close(into:)`` on the loop's thread. A mutex-protected queue and array, with an atomic
/// flag, set and cleared under the mutex, that tells whether anything waits, so the loop looks without locking.
///
/// Blocks and changes are kept apart, blocks in a segmented ``BlockQueue``: a batch of blocks is then handed to the
/// loop whole (relinking its segments), not entry by entry. Each change records how many blocks were posted before it,
/// so the loop applies it exactly where it was posted among them (a change may queue blocks itself, say from a schedule
/// handler, and those must follow the blocks posted before the change). Per-producer order is kept.
///
/// A ``LoopThread`` that stops first refuses further blocks (``refuseBlocks(into:)``); once closed (the loop's
/// thread is exiting) it refuses everything.
final class Inbox: Sendable {
    /// An item change sent from another thread, and how many of the inbox's blocks were posted before it.
    struct Change {
        let blocksBefore: Int
        let apply: @Sendable () -> Void
    }

    /// What waits: blocks and jobs, oldest first, and the changes among them.
    struct Contents {
        var blocks: BlockQueue
        var changes: [Change]

        var isEmpty: Bool { blocks.isEmpty && changes.isEmpty }
    }

    /// What ``post(_:isClosureBlock:stamp:)`` did.
    enum Posting {
        /// Dropped: the inbox is closed, or refuses closure blocks.
        case refused
        /// Queued into an empty inbox: the poster must wake the loop if it sleeps.
        case queuedFirst
        /// Queued behind entries not taken yet: whoever queued the first of them wakes the loop, and the loop
        /// takes them all at once, so this post need not.
        case queuedBehind
    }

    /// Spins briefly when contended: posters and the loop hold it for a few dozen instructions, and W2 (two threads
    /// posting to one loop, 21 alternating runs) went from 13.2 to 20.0 M calls/s with `perform(with:_:)` and from
    /// 6.6 to 7.5 M closures/s once a poster that finds it held no longer sleeps at once; W1, W1 on one CPU and W5
    /// did not move (Docs/Benchmarks.md).
    private let contents = Locked<Contents>(Contents(blocks: BlockQueue(), changes: []), spinsWhenContended: true)
    /// The segments of the loop's block queues, this inbox's included.
    let segments = BlockSegmentPool()
    /// Whether anything waits: written only with the lock held, together with the arrays, so it is exact (no lag
    /// behind an append); read without the lock. Sequentially consistent: part of the wake-up handshake.
    private let hasEntries = Atomic<Bool>(false)
    /// Set by ``close(into:)`` with the lock held, and read by the posts with it held: no post slips past it.
    private let closed = Atomic<Bool>(false)
    /// Set by ``refuseBlocks(into:)``, under the lock like `closed`: closure blocks are refused, jobs and changes
    /// not.
    private let refusingBlocks = Atomic<Bool>(false)

    /// Whether nothing is waiting. Sequentially consistent: part of the wake-up handshake.
    var isEmpty: Bool { !hasEntries.load(ordering: .sequentiallyConsistent) }

    /// Appends `block` with its hand-over `stamp` (0: none); drops it (``Posting/refused``) once the inbox is
    /// closed, or, for a closure block (`isClosureBlock`), once it refuses blocks. The caller wakes the loop on
    /// ``Posting/queuedFirst``.
    @inline(__always)
    func post(_ block: consuming sending PendingBlock, isClosureBlock: Bool, stamp: UInt32) -> Posting {
        // Handed to the lock's body to consume: appending moves the block instead of copying it.
        contents.withLock(consuming: block) { contents, block in
            guard !closed.load(ordering: .relaxed) else { return .refused }
            guard !isClosureBlock || !refusingBlocks.load(ordering: .relaxed) else { return .refused }
            let wasEmpty = contents.isEmpty
            contents.blocks.append(block, pool: segments)
            if stamp != 0 { contents.blocks.stampLast(stamp) }
            guard wasEmpty else { return .queuedBehind }
            hasEntries.store(true, ordering: .sequentiallyConsistent)
            return .queuedFirst
        }
    }

    /// Appends an item change; answers as ``post(_:isClosureBlock:stamp:)`` does (refused only once closed).
    func post(change: @escaping @Sendable () -> Void) -> Posting {
        contents.withLock { contents in
            guard !closed.load(ordering: .relaxed) else { return .refused }
            let wasEmpty = contents.isEmpty
            contents.changes.append(Change(blocksBefore: contents.blocks.count, apply: change))
            guard wasEmpty else { return .queuedBehind }
            hasEntries.store(true, ordering: .sequentiallyConsistent)
            return .queuedFirst
        }
    }

    /// The common case of a take: when only blocks wait (no change among them), moves them behind `queue`'s by
    /// relinking segments (an empty `queue` trades places with the inbox's, so its kept segment takes the next
    /// posts) and answers `true`. Answers `false`, taking nothing, when a change waits: the caller then takes
    /// everything with ``takeAll(into:)`` and applies the changes among the blocks. Loop thread only.
    @inline(__always)
    func takeBlocksUnlessChanged(appendingTo queue: inout BlockQueue) -> Bool {
        contents.withLock { contents in
            guard contents.changes.isEmpty else { return false }
            queue.append(contentsOf: &contents.blocks)
            hasEntries.store(false, ordering: .sequentiallyConsistent)
            return true
        }
    }

    /// Moves everything waiting into `taken` (which should be empty), swapping storage to avoid copying.
    func takeAll(into taken: inout Contents) {
        guard !isEmpty else { return }
        contents.withLock { contents in
            swap(&contents, &taken)
            hasEntries.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Refuses every later closure block (jobs and item changes are still taken until ``close(into:)``), and moves
    /// everything waiting into `taken` (which should be empty) under the same lock, so that no block
    /// accepted before the refusal is left behind.
    func refuseBlocks(into taken: inout Contents) {
        contents.withLock { contents in
            refusingBlocks.store(true, ordering: .relaxed)
            swap(&contents, &taken)
            hasEntries.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Refuses every later post, and moves everything waiting into `taken` (which should be empty). Called
    /// when the loop's thread exits: nothing posted can then be lost between the last take and the teardown.
    func close(into taken: inout Contents) {
        contents.withLock { contents in
            closed.store(true, ordering: .relaxed)
            swap(&contents, &taken)
            hasEntries.store(false, ordering: .sequentiallyConsistent)
        }
    }
}
