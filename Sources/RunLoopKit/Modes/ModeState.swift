/// The items of one mode of one loop. Loop thread only.
final class ModeState {
    let name: Loop.Mode
    /// Index in the loop's mode list; items record it in ``LoopItem/memberships``.
    let id: Int
    /// Whether the mode is one of the loop's common modes, so passes (a block or job for ``Loop/Mode/common``, the
    /// main queue) need not hash its name. Set when the mode is created or made common (never cleared, as in CF).
    @exclusivity(unchecked) var isCommon = false
    /// Whether this is ``Loop/Mode/default``, so passes match blocks queued for it without comparing names.
    let isDefault: Bool

    // Unordered; each item records its index here (its slot) in its `LoopItem` membership for this mode, so
    // insert and remove are O(1) without hashing: removal moves the last item into the hole.
    @exclusivity(unchecked) private(set) var sources: [LoopSource] = []
    @exclusivity(unchecked) private(set) var descriptorSources: [DescriptorBackedSource] = []
    @exclusivity(unchecked) private(set) var timers: [LoopTimer] = []
    /// Sorted by order; equal orders keep the order they were added in.
    @exclusivity(unchecked) private(set) var observers: [LoopObserver] = []
    /// The union of the observers' activities, to skip dispatch cheaply. Only ever grows, as in CF.
    private(set) var observedActivities: Loop.Activity = []
    /// How many items of each kind the mode holds, for other threads (``Loop/itemCounts(in:)``).
    let counts = ItemCountCells()

    init(name: Loop.Mode, id: Int) {
        self.name = name
        self.id = id
        self.isDefault = name == .default
    }

    /// How many of its sources, descriptor sources and timers keep a run of the mode going (those whose
    /// `keepsRunAlive` is true; observers never do).
    @exclusivity(unchecked) private(set) var keepAliveCount = 0

    /// Counts an item of the mode that starts (`+1`) or stops (`-1`) keeping runs going.
    func adjustKeepAliveCount(by delta: Int) {
        keepAliveCount += delta
    }

    func insertObserver(_ observer: LoopObserver) {
        let index = observers.firstIndex { $0.order > observer.order } ?? observers.endIndex
        observers.insert(observer, at: index)
        observedActivities.formUnion(observer.activities)
    }

    func removeObserver(_ observer: LoopObserver) {
        if let index = observers.firstIndex(where: { $0 === observer }) {
            observers.remove(at: index)
        }
    }

    /// Adds `item`; answers its slot (observers, kept sorted by order, have none: 0).
    func insert(_ item: AnyItem) -> Int {
        counts.adjust(item, by: 1)
        switch item {
        case .source(let source): return append(source, to: &sources)
        case .descriptor(let source): return append(source, to: &descriptorSources)
        case .timer(let timer): return append(timer, to: &timers)
        case .observer(let observer):
            insertObserver(observer)
            return 0
        }
    }

    /// Removes `item`, which sits at `slot`.
    func remove(_ item: AnyItem, at slot: Int) {
        counts.adjust(item, by: -1)
        switch item {
        case .source: removeSwapping(at: slot, from: &sources)
        case .descriptor: removeSwapping(at: slot, from: &descriptorSources)
        case .timer: removeSwapping(at: slot, from: &timers)
        case .observer(let observer): removeObserver(observer)
        }
    }

    /// Appends `item` (counting it if it keeps runs alive); answers its slot.
    private func append<Item: LoopItem>(_ item: Item, to items: inout [Item]) -> Int {
        if item.countsTowardKeepAlive { keepAliveCount += 1 }
        items.append(item)
        return items.count - 1
    }

    /// Fills the hole at `slot` with the last item and tells that item its new slot.
    private func removeSwapping<Item: LoopItem>(at slot: Int, from items: inout [Item]) {
        if items[slot].countsTowardKeepAlive { keepAliveCount -= 1 }
        let last = items.removeLast()
        guard slot < items.count else { return }
        last.memberships.setSlot(slot, modeID: id)  // Before the move into the hole, which consumes `last`.
        items[slot] = last
    }
}
