import Synchronization

/// A count shared between threads, for closures that must capture one before their owner exists.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    /// Adds `amount`.
    func add(_ amount: Int = 1) {
        value.add(amount, ordering: .relaxed)
    }

    /// The count now.
    var count: Int { value.load(ordering: .relaxed) }
}
