import Synchronization

/// One producer's numbered deliveries to one consumer: the exactly-once check.
///
/// The producer (one thread) takes sequence numbers 1, 2, 3, ... with ``reserve()`` before posting each delivery,
/// and gives one back with ``refuse(_:)`` when the post was refused (a stopping `LoopThread`): the number is reused,
/// so a refused delivery that ran all the same would arrive twice. The consumer reports each arrival with
/// ``receive(_:)``: a number seen before is a duplicate; a number ahead of the next one expected is out of order,
/// a violation on a channel whose deliveries must keep their order. ``isComplete`` says whether every number
/// posted arrived exactly once.
final class Channel: Sendable {
    /// Names the producer, the route and the consumer, for messages.
    let label: String
    /// Whether deliveries must arrive in posting order (a documented guarantee of the route).
    let strictOrder: Bool
    /// The report row this channel counts into.
    let tally: Tally

    private let reserved = Atomic<Int>(0)
    private let receipts = Mutex(Receipts())

    /// What the consumer has seen.
    private struct Receipts {
        /// The lowest number not yet received.
        var next = 1
        /// Numbers received ahead of `next`.
        var ahead: Set<Int> = []
        /// Distinct numbers received.
        var received = 0
    }

    /// A channel named `label` counting into `tally`.
    init(_ label: String, tally: Tally, strictOrder: Bool) {
        self.label = label
        self.tally = tally
        self.strictOrder = strictOrder
    }

    /// The next sequence number, counted as posted. Producer only.
    func reserve() -> Int {
        tally.expect()
        return reserved.add(1, ordering: .relaxed).newValue
    }

    /// Takes back `sequence`, the number just reserved, whose post was refused. Producer only.
    func refuse(_ sequence: Int) {
        let previous = reserved.subtract(1, ordering: .relaxed).oldValue
        if previous != sequence {
            Violations.shared.record("\(label): refused #\(sequence), but #\(previous) was the last reserved")
        }
        tally.expect(-1)
    }

    /// Records the arrival of delivery `sequence`. Consumer only (any thread, one at a time or not).
    func receive(_ sequence: Int) {
        enum Outcome {
            case inOrder
            case ahead(expected: Int)
            case duplicate
        }
        let outcome = receipts.withLock { receipts -> Outcome in
            if sequence == receipts.next {
                receipts.next += 1
                while receipts.ahead.remove(receipts.next) != nil { receipts.next += 1 }
                receipts.received += 1
                return .inOrder
            }
            if sequence < receipts.next || receipts.ahead.contains(sequence) { return .duplicate }
            receipts.ahead.insert(sequence)
            receipts.received += 1
            return .ahead(expected: receipts.next)
        }
        switch outcome {
        case .inOrder:
            tally.deliver()
        case .ahead(let expected):
            tally.deliver()
            if strictOrder {
                Violations.shared.record("\(label): #\(sequence) arrived before #\(expected) (order must be kept)")
            }
        case .duplicate:
            Violations.shared.record("\(label): #\(sequence) arrived twice")
        }
    }

    /// How many numbers were posted (reserved and not refused).
    var posted: Int { reserved.load(ordering: .relaxed) }

    /// How many distinct numbers arrived.
    var received: Int { receipts.withLock { $0.received } }

    /// Whether every number posted arrived, exactly once.
    var isComplete: Bool { received == posted }

    /// Records a violation unless ``isComplete``; `context` says when the check was made.
    @discardableResult
    func verifyComplete(_ context: String) -> Bool {
        let (posted, received) = (posted, received)
        guard posted != received else { return true }
        Violations.shared.record("\(label): \(posted) posted, \(received) arrived \(context)")
        return false
    }
}
