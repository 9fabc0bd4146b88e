import Synchronization

/// Numbered items waiting for a custom source's perform: signals coalesce, so the perform takes everything put
/// here since the last one, and a lost signal shows as items left behind.
final class Mailbox: Sendable {
    private let items = Mutex<[Int]>([])

    /// Puts item `sequence` in the mailbox.
    func put(_ sequence: Int) {
        items.withLock { $0.append(sequence) }
    }

    /// Takes every item, oldest first.
    func takeAll() -> [Int] {
        items.withLock { items in
            defer { items.removeAll(keepingCapacity: true) }
            return items
        }
    }
}
