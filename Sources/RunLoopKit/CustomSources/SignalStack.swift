import Synchronization

/// The loop's signalled sources: a lock-free stack of those signalled since the loop last looked (a Treiber stack
/// through ``LoopSource/nextSignalled``), and the list the loop took from it, waiting to be performed.
///
/// Threading: ``push(_:)`` from any thread; ``popAll(_:)``, ``close(_:)`` and ``pending`` on the loop's thread.
/// Push-many, pop-all is free of the ABA problem: nodes are never popped one at a time. Each pushed source is retained
/// until popped.
///
/// Closed for good as the loop's thread exits (``close(_:)``): a push after that keeps nothing. A source retains its
/// loop, so a source left on the stack of a loop whose thread is gone would keep both alive for ever (issue 42: one
/// churned loop in about 60,000 leaked that way, with its block segments and tables, when a `signal()` from another
/// thread raced the loop's teardown).
final class SignalStack: @unchecked Sendable {  // Unchecked: `pending` is loop-thread only; the stack is atomic.
    /// The newest pushed source's address (retained), ``empty`` or ``closed``.
    private let head = Atomic<UInt>(SignalStack.empty)
    private static let empty: UInt = 0
    /// The head of a closed stack: no address is 1.
    private static let closed: UInt = 1

    /// Signalled sources taken from the stack and not yet performed, sorted by order, then by signal arrival. Loop
    /// thread only.
    @exclusivity(unchecked) var pending: [LoopSource] = []

    /// Whether no source is waiting (none was pushed since the last look, or the stack is closed). Sequentially
    /// consistent: part of the wake-up handshake.
    var isEmpty: Bool { head.load(ordering: .sequentiallyConsistent) <= Self.closed }

    /// Pushes `source`, retained until it is popped; answers `false`, keeping nothing, once the stack is closed.
    func push(_ source: LoopSource) -> Bool {
        let node = Unmanaged.passRetained(source)  // Before it is published: a pop may take it at once.
        let address = UInt(bitPattern: node.toOpaque())
        var current = head.load(ordering: .relaxed)
        while current != Self.closed {
            source.nextSignalled = Self.node(at: current)
            let (exchanged, original) = head.compareExchange(
                expected: current, desired: address, ordering: .sequentiallyConsistent)
            if exchanged { return true }
            current = original
        }
        source.nextSignalled = nil
        node.release()
        return false
    }

    /// Takes every waiting source, calling `body` with each in the order they were pushed.
    func popAll(_ body: (LoopSource) -> Void) {
        var current = head.load(ordering: .sequentiallyConsistent)
        while current > Self.closed {
            let (exchanged, original) = head.compareExchange(
                expected: current, desired: Self.empty, ordering: .sequentiallyConsistent)
            if exchanged { return visit(from: current, body) }
            current = original
        }
    }

    /// Closes the stack for good and takes what was waiting, as ``popAll(_:)`` does: every later push fails. Loop
    /// thread only, as its thread exits.
    func close(_ body: (LoopSource) -> Void) {
        let top = head.exchange(Self.closed, ordering: .sequentiallyConsistent)
        if top > Self.closed { visit(from: top, body) }
    }

    /// Calls `body` with each source of the chain that starts at `top` (newest first in the chain), oldest first,
    /// releasing each.
    private func visit(from top: UInt, _ body: (LoopSource) -> Void) {
        // The stack is newest-first: reverse the links in place to visit oldest-first.
        var node = Self.node(at: top)!
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

    /// The source whose address is `bits`, `nil` for ``empty``.
    private static func node(at bits: UInt) -> Unmanaged<LoopSource>? {
        guard bits > closed, let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged.fromOpaque(pointer)
    }
}
