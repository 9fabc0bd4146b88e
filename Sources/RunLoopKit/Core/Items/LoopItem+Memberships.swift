/// The loop's name for an item's shared part (``LoopItem``), as seen through `item.base`.
typealias ItemCore = LoopItem

extension LoopItem {
    /// Where the item sits in one mode: the mode's id, and the item's index in that mode's array of its kind.
    struct Membership {
        let modeID: Int
        var slot: Int
    }

    /// The modes an item is in, with its slot in each. Loop thread only.
    ///
    /// Most items live in one mode, so the first membership is stored inline and only the others go to an array:
    /// adding a new item to its first mode allocates nothing here. Order carries no meaning.
    struct Memberships {
        private var first: Membership?
        private var others: [Membership] = []

        /// Whether the item is in no mode.
        var isEmpty: Bool { first == nil }

        /// Some membership, `nil` when there is none (removing it and asking again walks all of them).
        var any: Membership? { others.last ?? first }

        func contains(modeID: Int) -> Bool {
            first?.modeID == modeID || others.contains { $0.modeID == modeID }
        }

        /// Records a membership; the item must not be in that mode yet.
        mutating func insert(_ membership: Membership) {
            if first == nil { first = membership } else { others.append(membership) }
        }

        /// Forgets the membership of mode `modeID`; answers the slot it had, `nil` if the item was not in it.
        mutating func remove(modeID: Int) -> Int? {
            if let current = first, current.modeID == modeID {
                first = others.popLast()
                return current.slot
            }
            guard let index = others.firstIndex(where: { $0.modeID == modeID }) else { return nil }
            others.swapAt(index, others.count - 1)
            return others.removeLast().slot
        }

        /// Calls `body` with every membership.
        func forEach(_ body: (Membership) -> Void) {
            if let first { body(first) }
            others.forEach(body)
        }

        /// Records that the item now sits at `slot` in mode `modeID`.
        mutating func setSlot(_ slot: Int, modeID: Int) {
            if first?.modeID == modeID {
                first?.slot = slot
                return
            }
            if let index = others.firstIndex(where: { $0.modeID == modeID }) { others[index].slot = slot }
        }
    }
}
