import Synchronization

/// How many items of each kind one mode (or the common pseudo-mode) holds, written by the loop's thread alone and
/// readable from any thread: what ``Loop/itemCounts(in:)`` reads.
///
/// The loop's thread is the only writer, so an update is a relaxed load and store (plain moves, no locked
/// instruction), made where the mode's item arrays change: on add and remove, never in a pass that changes nothing.
final class ItemCountCells: Sendable {
    private let sources = Atomic<Int>(0)
    private let descriptorSources = Atomic<Int>(0)
    private let timers = Atomic<Int>(0)
    private let observers = Atomic<Int>(0)

    /// Counts `item` in (`delta` 1) or out (`delta` -1). Loop thread only.
    @inline(__always)
    func adjust(_ item: AnyItem, by delta: Int) {
        switch item {
        case .source: Self.add(delta, to: sources)
        case .descriptor: Self.add(delta, to: descriptorSources)
        case .timer: Self.add(delta, to: timers)
        case .observer: Self.add(delta, to: observers)
        }
    }

    /// The single writer's update: a load and a store, no read-modify-write instruction.
    @inline(__always)
    private static func add(_ delta: Int, to cell: borrowing Atomic<Int>) {
        cell.store(cell.load(ordering: .relaxed) &+ delta, ordering: .relaxed)
    }

    /// Forgets every count (the loop's teardown emptied the pseudo-mode at once). Loop thread only.
    func reset() {
        sources.store(0, ordering: .relaxed)
        descriptorSources.store(0, ordering: .relaxed)
        timers.store(0, ordering: .relaxed)
        observers.store(0, ordering: .relaxed)
    }

    /// The counts now. Any thread; the kinds are read one after another.
    var snapshot: Loop.ItemCounts {
        Loop.ItemCounts(
            sources: sources.load(ordering: .relaxed),
            descriptorSources: descriptorSources.load(ordering: .relaxed),
            timers: timers.load(ordering: .relaxed),
            observers: observers.load(ordering: .relaxed))
    }
}
