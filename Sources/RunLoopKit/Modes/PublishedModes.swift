/// What other threads may know of a loop's modes, under the loop's `publishedModes` lock: their names
/// (``Loop/allModes``, ``Loop/commonModes``, `contains(_:in:)` from another thread) and the mode of the innermost run
/// (``Loop/currentMode``). The loop's thread keeps the real table (``ModeTable``); this is its published summary.
struct PublishedModes {
    /// The mode of the innermost run in progress; written at run entry and exit only.
    var running: Loop.Mode?
    /// Every mode, in the order it came into being (a mode named only by a block has no id yet).
    var all: [Loop.Mode] = []
    /// The id of each mode the loop's thread created (its index in the loop's mode list).
    var ids: [Loop.Mode: Int] = [:]
    /// The common modes.
    var common: Set<Loop.Mode> = [.default]
    /// The item counts of each mode the loop's thread created.
    var counts: [Loop.Mode: ItemCountCells] = [:]
    /// The item counts of the common pseudo-mode (``ModeTable/commonCounts``).
    let commonCounts: ItemCountCells

    /// For each mode a block named alone, the one-element list such blocks hold (see ``BlockModes``).
    var blockModeLists: [Loop.Mode: [Loop.Mode]] = [:]

    /// Records that a block named `mode` (not ``Loop/Mode/common``): it is listed from now on.
    mutating func noteNamedByBlock(_ mode: Loop.Mode) {
        if !all.contains(mode) { all.append(mode) }
    }

    /// Records that a block named `mode` alone (neither the default nor the common mode) and answers the list
    /// it holds, made on first use.
    mutating func blockModeList(naming mode: Loop.Mode) -> [Loop.Mode] {
        if let list = blockModeLists[mode] { return list }
        noteNamedByBlock(mode)
        let list = [mode]
        blockModeLists[mode] = list
        return list
    }

    /// Records that the loop's thread created `mode` with `id` and `counts`.
    mutating func created(_ mode: Loop.Mode, id: Int, counts: ItemCountCells) {
        ids[mode] = id
        self.counts[mode] = counts
        if !all.contains(mode) { all.append(mode) }
    }
}
