import RunLoopKitSystem

/// A loop's modes, by id and by name, and its common modes with the items added to ``Loop/Mode/common``. Loop
/// thread only; other threads read the published summary (``PublishedModes``).
struct ModeTable {
    /// Every mode, in the order it came into being: a mode's id is its index here.
    private(set) var list: [ModeState] = []
    /// The same modes by name, for loops with many modes (see ``Loop/existingMode(named:)``).
    private(set) var byName: [Loop.Mode: ModeState] = [:]
    /// The loop's common modes (CF's common-modes set).
    var commonNames: Set<Loop.Mode> = [.default]
    /// Items added to the common pseudo-mode, copied into every common mode now and later.
    var commonItems: [ObjectIdentifier: AnyItem] = [:]
    /// How many items of each kind ``commonItems`` holds, for other threads (``Loop/itemCounts(in:)``), which read
    /// it through the published summary (``PublishedModes/commonCounts``); written here, next to `commonItems`.
    let commonCounts = ItemCountCells()

    /// The mode of id `id`.
    subscript(id: Int) -> ModeState { list[id] }

    /// Creates the mode named `name`, which must not exist yet.
    mutating func make(named name: Loop.Mode) -> ModeState {
        let state = ModeState(name: name, id: list.count)
        insert(state)
        return state
    }

    /// Takes in `state`, a mode just made for the next id.
    mutating func insert(_ state: ModeState) {
        require(state.id == list.count, "a mode's id must be its index in the mode table")
        state.isCommon = commonNames.contains(state.name)
        byName[state.name] = state
        list.append(state)
    }
}
