import Synchronization

/// One row of the report: a kind of delivery, how many were expected and how many arrived.
///
/// Safe from any thread: producers count what they expect, consumers (callouts on loop threads) what arrived.
final class Tally: Sendable {
    /// The row's name, e.g. `blocks: Loop.perform`.
    let kind: String
    /// What the soak checks about it, shown in the report; `nil` for a figure that is only counted.
    let promise: String?

    private let expectedCount = Atomic<Int>(0)
    private let deliveredCount = Atomic<Int>(0)

    /// A row named `kind` checking `promise` (`nil`: counted only).
    init(kind: String, promise: String?) {
        self.kind = kind
        self.promise = promise
    }

    /// Counts `count` more deliveries that must arrive.
    func expect(_ count: Int = 1) {
        expectedCount.add(count, ordering: .relaxed)
    }

    /// Counts `count` deliveries that arrived.
    func deliver(_ count: Int = 1) {
        deliveredCount.add(count, ordering: .relaxed)
    }

    /// Deliveries expected so far.
    var expected: Int { expectedCount.load(ordering: .relaxed) }
    /// Deliveries arrived so far.
    var delivered: Int { deliveredCount.load(ordering: .relaxed) }
    /// Whether every expected delivery arrived and no more (always true for a counted-only row).
    var isComplete: Bool { promise == nil || expected == delivered }
}

/// Every row of the report, in the order they were made.
final class Tallies: Sendable {
    /// The soak's one table.
    static let shared = Tallies()

    private let rows = Mutex<[Tally]>([])

    /// Makes a row and adds it to the table.
    func make(_ kind: String, promise: String?) -> Tally {
        let tally = Tally(kind: kind, promise: promise)
        rows.withLock { $0.append(tally) }
        return tally
    }

    /// The rows, oldest first.
    var all: [Tally] { rows.withLock { $0 } }

    /// Whether every checked row has received what it expects.
    var allComplete: Bool { all.allSatisfy(\.isComplete) }
}
