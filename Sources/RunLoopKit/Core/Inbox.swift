import Synchronization

/// Which modes a block may run in.
enum BlockModes: Sendable {
    case one(Loop.Mode)
    case many([Loop.Mode])
}

/// An actor's job as the runtime made it, with the executor (the loop, or a ``LoopExecutor`` of it) it runs on.
/// Trivially copyable: queueing it allocates nothing and copying it retains nothing.
struct QueuedJob {
    let job: UnownedJob
    let executor: UnownedSerialExecutor
}

/// A block waiting for a pass in one of its modes: a closure from ``Loop/perform(in:_:)-(Mode,_)``, or an actor's
/// job (then `job` is set and `closure` is an empty closure without context, never called).
///
/// Not one enum of the two: copying a block (into the inbox, into the pass's batch) then costs a plain retain of
/// the closure's context and a copy of plain words, without outlined switches over cases.
struct PendingBlock {
    let modes: BlockModes
    let closure: @Sendable () -> Void
    let job: QueuedJob?

    init(modes: BlockModes, closure: @escaping @Sendable () -> Void) {
        self.modes = modes
        self.closure = closure
        self.job = nil
    }

    init(modes: BlockModes, job: QueuedJob) {
        self.modes = modes
        self.closure = PendingBlock.noClosure
        self.job = job
    }

    /// The closure of a job's block: it captures nothing, so storing and copying it retains nothing.
    private static let noClosure: @Sendable () -> Void = {}
}

/// Work other threads hand to a loop: blocks and jobs, and changes to the loop's items (applied on its thread).
///
/// Threading: ``post(_:)`` from any thread; ``takeAll(into:)`` and ``close(into:)`` on the loop's thread. A
/// mutex-protected array, with an atomic count so the loop looks at it without locking when it is empty.
/// Per-producer order is kept. A ``LoopThread`` that stops first refuses further blocks (``refuseBlocks()``); once
/// closed (the loop's thread is exiting) it refuses everything.
final class Inbox: Sendable {
    enum Entry {
        case block(PendingBlock)
        case change(@Sendable () -> Void)
    }

    private let entries = Locked<[Entry]>([])
    private let count = Atomic<Int>(0)
    /// Set by ``close(into:)`` with the lock held, and read by ``post(_:)`` with it held: no post slips past it.
    private let closed = Atomic<Bool>(false)
    /// Set by ``refuseBlocks()``, under the lock like `closed`: closure blocks are refused, jobs and changes not.
    private let refusingBlocks = Atomic<Bool>(false)

    /// Whether anything is waiting. Sequentially consistent: part of the wake-up handshake.
    var isEmpty: Bool { count.load(ordering: .sequentiallyConsistent) == 0 }

    /// Appends `entry`; answers `false` (dropping it) once the inbox is closed, or, for a closure block
    /// (`isClosureBlock`), once it refuses blocks.
    @discardableResult
    func post(_ entry: consuming sending Entry, isClosureBlock: Bool = false) -> Bool {
        // Handed to the lock's body to consume: appending moves the entry instead of copying it (a copy of a block
        // is an outlined switch over its cases plus retains).
        let posted = entries.withLock(consuming: entry) { entries, entry in
            guard !closed.load(ordering: .relaxed) else { return false }
            guard !isClosureBlock || !refusingBlocks.load(ordering: .relaxed) else { return false }
            entries.append(entry)
            return true
        }
        if posted { count.add(1, ordering: .sequentiallyConsistent) }
        return posted
    }

    /// Moves everything waiting into `buffer` (which should be empty), swapping storage to avoid copying.
    func takeAll(into buffer: inout [Entry]) {
        guard !isEmpty else { return }
        entries.withLock { swap(&$0, &buffer) }
        count.subtract(buffer.count, ordering: .sequentiallyConsistent)
    }

    /// Refuses every later closure block (jobs and item changes are still taken until ``close(into:)``), and moves
    /// everything waiting into `buffer` (which should be empty) under the same lock.
    ///
    /// Taken here rather than by a later ``takeAll(into:)``: a post appends under the lock but counts itself just
    /// after, so a take that trusted the count could miss a block accepted before the refusal.
    func refuseBlocks(into buffer: inout [Entry]) {
        entries.withLock { entries in
            refusingBlocks.store(true, ordering: .relaxed)
            swap(&entries, &buffer)
        }
        count.subtract(buffer.count, ordering: .sequentiallyConsistent)
    }

    /// Refuses every later post, and moves everything waiting into `buffer` (which should be empty). Called once,
    /// when the loop's thread exits: nothing posted can then be lost between the last take and the teardown.
    func close(into buffer: inout [Entry]) {
        entries.withLock { entries in
            closed.store(true, ordering: .relaxed)
            swap(&entries, &buffer)
        }
        count.subtract(buffer.count, ordering: .sequentiallyConsistent)
    }
}
