import Synchronization

/// Which modes a block may run in.
enum BlockModes: Sendable {
    case one(Loop.Mode)
    case many([Loop.Mode])
}

/// What a queued block runs: a closure from ``Loop/perform(in:_:)-(Mode,_)``, or a job an actor's executor (the
/// loop, or a ``LoopExecutor`` of it) was handed by the concurrency runtime. A job is carried as the runtime made
/// it, with the executor it runs on: queueing it allocates nothing.
enum BlockBody {
    case closure(@Sendable () -> Void)
    case job(UnownedJob, UnownedSerialExecutor)
}

/// A block waiting for a pass in one of its modes.
struct PendingBlock {
    let modes: BlockModes
    let body: BlockBody
}

/// Work other threads hand to a loop: blocks and jobs, and changes to the loop's items (applied on its thread).
///
/// Threading: ``post(_:)`` from any thread; ``takeAll(into:)`` and ``close(into:)`` on the loop's thread. A
/// mutex-protected array, with an atomic count so the loop looks at it without locking when it is empty.
/// Per-producer order is kept. Once closed (the loop's thread is exiting) it refuses everything.
final class Inbox: Sendable {
    enum Entry {
        case block(PendingBlock)
        case change(@Sendable () -> Void)
    }

    private struct Queue {
        var entries: [Entry] = []
        var isClosed = false
    }

    private let queue = Locked<Queue>(Queue())
    private let count = Atomic<Int>(0)

    /// Whether anything is waiting. Sequentially consistent: part of the wake-up handshake.
    var isEmpty: Bool { count.load(ordering: .sequentiallyConsistent) == 0 }

    /// Appends `entry`; answers `false` (dropping it) once the inbox is closed.
    @discardableResult
    func post(_ entry: sending Entry) -> Bool {
        let posted = queue.withLock { queue in
            guard !queue.isClosed else { return false }
            queue.entries.append(entry)
            return true
        }
        if posted { count.add(1, ordering: .sequentiallyConsistent) }
        return posted
    }

    /// Moves everything waiting into `buffer` (which should be empty), swapping storage to avoid copying.
    func takeAll(into buffer: inout [Entry]) {
        guard !isEmpty else { return }
        queue.withLock { swap(&$0.entries, &buffer) }
        count.subtract(buffer.count, ordering: .sequentiallyConsistent)
    }

    /// Refuses every later post, and moves everything waiting into `buffer` (which should be empty). Called once,
    /// when the loop's thread exits: nothing posted can then be lost between the last take and the teardown.
    func close(into buffer: inout [Entry]) {
        queue.withLock { queue in
            queue.isClosed = true
            swap(&queue.entries, &buffer)
        }
        count.subtract(buffer.count, ordering: .sequentiallyConsistent)
    }
}
