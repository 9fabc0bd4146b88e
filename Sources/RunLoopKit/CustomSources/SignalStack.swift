import Synchronization

/// The loop's signalled sources: a lock-free stack of those signalled since the loop last looked (a Treiber stack
/// through ``LoopSource/nextSignalled``), and the list the loop took from it, waiting to be performed.
///
/// Threading: ``push(_:)`` from any thread; ``popAll(_:)`` and ``pending`` on the loop's thread. Push-many, pop-all
/// is free of the ABA problem: nodes are never popped one at a time. Each pushed source is retained until popped.
final class SignalStack: @unchecked Sendable {  // Unchecked: `pending` is loop-thread only; the stack is atomic.
    private let head = Atomic<Unmanaged<LoopSource>?>(nil)
    /// Signalled sources taken from the stack and not yet performed, sorted by order, then by signal arrival. Loop
    /// thread only.
    @exclusivity(unchecked) var pending: [LoopSource] = []

    /// Whether any source is waiting. Sequentially consistent: part of the wake-up handshake.
    var isEmpty: Bool { head.load(ordering: .sequentiallyConsistent) == nil }

    func push(_ source: LoopSource) {
        let node = Unmanaged.passRetained(source)
        var current = head.load(ordering: .relaxed)
        while true {
            source.nextSignalled = current
            let (exchanged, original) = head.compareExchange(
                expected: current,
                desired: node,
                ordering: .sequentiallyConsistent
            )
            if exchanged { return }
            current = original
        }
    }

    /// Takes every waiting source, calling `body` with each in the order they were pushed.
    func popAll(_ body: (LoopSource) -> Void) {
        guard var node = head.exchange(nil, ordering: .sequentiallyConsistent) else { return }
        // The stack is newest-first: reverse the links in place to visit oldest-first.
        var reversed: Unmanaged<LoopSource>? = nil
        while true {
            let next = node.takeUnretainedValue().nextSignalled
            node.takeUnretainedValue().nextSignalled = reversed
            reversed = node
            guard let following = next else { break }
            node = following
        }
        while let current = reversed {
            let source = current.takeRetainedValue()
            reversed = source.nextSignalled
            source.nextSignalled = nil
            body(source)
        }
    }
}
