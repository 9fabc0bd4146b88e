extension LoopItem {
    /// Where the item sits in one mode: the mode's id, and the item's index in that mode's array of its kind.
    ///
    /// Stored as two 32-bit numbers, so a membership is one word and an item stays small (a loop has far fewer than
    /// 2³¹ modes, and a mode far fewer items).
    struct Membership {
        private let storedModeID: Int32
        private var storedSlot: Int32

        init(modeID: Int, slot: Int) {
            storedModeID = Int32(truncatingIfNeeded: modeID)
            storedSlot = Int32(truncatingIfNeeded: slot)
        }

        var modeID: Int { Int(storedModeID) }
        var slot: Int {
            get { Int(storedSlot) }
            set { storedSlot = Int32(truncatingIfNeeded: newValue) }
        }

        /// The stand-in for "no membership" in ``Memberships``' inline slot (no mode has a negative id).
        static let none = Membership(modeID: -1, slot: 0)
        var isNone: Bool { storedModeID < 0 }
    }

    /// The modes an item is in, with its slot in each. Loop thread only.
    ///
    /// Most items live in one mode, so the first membership is stored inline and only the others go to an array:
    /// adding a new item to its first mode allocates nothing here. Order carries no meaning.
    struct Memberships {
        private var first = Membership.none
        private var others: [Membership] = []

        /// Whether the item is in no mode.
        var isEmpty: Bool { first.isNone }

        /// Some membership, `nil` when there is none (removing it and asking again walks all of them).
        var any: Membership? { others.last ?? (first.isNone ? nil : first) }

        func contains(modeID: Int) -> Bool {
            first.modeID == modeID || (!others.isEmpty && others.contains { $0.modeID == modeID })
        }

        /// Records a membership; the item must not be in that mode yet.
        mutating func insert(_ membership: Membership) {
            if first.isNone { first = membership } else { others.append(membership) }
        }

        /// Forgets the membership of mode `modeID`; answers the slot it had, `nil` if the item was not in it.
        mutating func remove(modeID: Int) -> Int? {
            if first.modeID == modeID {
                let slot = first.slot
                first = others.popLast() ?? .none
                return slot
            }
            guard let index = others.firstIndex(where: { $0.modeID == modeID }) else { return nil }
            others.swapAt(index, others.count - 1)
            return others.removeLast().slot
        }

        /// Calls `body` with every membership.
        func forEach(_ body: (Membership) -> Void) {
            if !first.isNone { body(first) }
            others.forEach(body)
        }

        /// Records that the item now sits at `slot` in mode `modeID`.
        mutating func setSlot(_ slot: Int, modeID: Int) {
            if first.modeID == modeID {
                first.slot = slot
                return
            }
            if let index = others.firstIndex(where: { $0.modeID == modeID }) { others[index].slot = slot }
        }
    }
}
