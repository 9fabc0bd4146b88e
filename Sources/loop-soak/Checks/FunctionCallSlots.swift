import Synchronization

/// The channels that `perform(with:_:)` calls report to.
///
/// A C function pointer captures nothing, so the call's one word of argument carries everything: a slot of this
/// table in its high bits and the sequence number in its low 40 bits. Slots are claimed by long-lived producers
/// for the whole run, and by churned threads for their lifetime.
final class FunctionCallSlots: Sendable {
    /// The soak's one table.
    static let shared = FunctionCallSlots(capacity: 64)

    /// The function every `perform(with:_:)` of the soak posts: it hands the argument to ``deliver(_:)``.
    static let function: @convention(c) (Int) -> Void = { argument in
        FunctionCallSlots.shared.deliver(argument)
    }

    private static let sequenceBits = 40
    private let slots: Mutex<[Channel?]>

    private init(capacity: Int) {
        slots = Mutex([Channel?](repeating: nil, count: capacity))
    }

    /// Claims a free slot for `channel`; answers its number.
    func claim(_ channel: Channel) -> Int {
        let slot = slots.withLock { slots -> Int? in
            guard let free = slots.firstIndex(where: { $0 == nil }) else { return nil }
            slots[free] = channel
            return free
        }
        guard let slot else { fatalError("loop-soak: no free function-call slot") }
        return slot
    }

    /// Frees `slot` once its channel can receive no more calls.
    func release(_ slot: Int) {
        slots.withLock { $0[slot] = nil }
    }

    /// The argument naming delivery `sequence` of the channel in `slot`.
    func argument(slot: Int, sequence: Int) -> Int {
        slot << Self.sequenceBits | sequence
    }

    /// Hands a call's argument to its channel; a call for a freed slot is a violation (it ran after its thread's
    /// checks, or was never posted).
    func deliver(_ argument: Int) {
        let slot = argument >> Self.sequenceBits
        let sequence = argument & (1 << Self.sequenceBits - 1)
        guard let channel = slots.withLock({ $0[slot] }) else {
            Violations.shared.record("a perform(with:) call for free slot \(slot) (#\(sequence)) ran")
            return
        }
        channel.receive(sequence)
    }
}
