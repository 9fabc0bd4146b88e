import Synchronization

/// Which modes a block may run in.
enum BlockModes: Sendable {
    case one(Loop.Mode)
    case many([Loop.Mode])
}

/// A block waiting for a pass in one of its modes.
struct PendingBlock {
    let modes: BlockModes
    let body: @Sendable () -> Void
}

/// Work other threads hand to a loop: blocks, and changes to the loop's items (applied on its thread).
///
/// Threading: ``post(_:)`` from any thread; ``takeAll(into:)`` on the loop's thread. A mutex-protected array, with
/// an atomic count so the loop looks at it without locking when it is empty. Per-producer order is kept.
final class Inbox: Sendable {
    enum Entry {
        case block(PendingBlock)
        case change(@Sendable () -> Void)
    }

    private let entries = Locked<[Entry]>([])
    private let count = Atomic<Int>(0)

    /// Whether anything is waiting. Sequentially consistent: part of the wake-up handshake.
    var isEmpty: Bool { count.load(ordering: .sequentiallyConsistent) == 0 }

    func post(_ entry: sending Entry) {
        entries.withLock { $0.append(entry) }
        count.add(1, ordering: .sequentiallyConsistent)
    }

    /// Moves everything waiting into `buffer` (which should be empty), swapping storage to avoid copying.
    func takeAll(into buffer: inout [Entry]) {
        guard !isEmpty else { return }
        entries.withLock { swap(&$0, &buffer) }
        count.subtract(buffer.count, ordering: .sequentiallyConsistent)
    }
}
