import TestSupport
import Testing

@testable import RunLoopKit

/// An item's mode memberships (first one inline, the rest in an array) and a mode's slot bookkeeping.
@Suite struct MembershipsTests {
    typealias Membership = LoopItem.Membership

    @Test func insertRemoveAndSlotsAcrossTheInlineAndTheArrayPart() {
        var memberships = LoopItem.Memberships()
        #expect(memberships.isEmpty && memberships.any == nil)
        memberships.insert(Membership(modeID: 0, slot: 10))
        memberships.insert(Membership(modeID: 1, slot: 11))
        memberships.insert(Membership(modeID: 2, slot: 12))
        #expect([0, 1, 2].allSatisfy { memberships.contains(modeID: $0) } && !memberships.contains(modeID: 3))

        memberships.setSlot(20, modeID: 0)
        memberships.setSlot(22, modeID: 2)
        #expect(memberships.remove(modeID: 3) == nil)
        #expect(memberships.remove(modeID: 0) == 20)  // The inline one: an array entry takes its place.
        #expect(!memberships.contains(modeID: 0) && memberships.contains(modeID: 1) && memberships.contains(modeID: 2))
        #expect(memberships.remove(modeID: 2) == 22)
        #expect(memberships.remove(modeID: 1) == 11)
        #expect(memberships.isEmpty && memberships.any == nil)
    }

    /// Items removed from the middle of a mode: the others keep working (a swap-remove updates the moved item's slot).
    @Test func removingItemsFromTheMiddleOfAModeKeepsTheOthersInIt() {
        let performed = Recorder<Int>()
        ItemsSupport.onLoopThread { loop in
            let sources = (0..<6).map { index in LoopSource(order: index) { _ in performed.append(index) } }
            for source in sources {
                try! loop.add(source)
                try! loop.add(source, to: "other")
            }
            loop.remove(sources[1])
            sources[3].invalidate()
            loop.remove(sources[0], from: "other")
            for source in sources { source.signal() }
            loop.run(in: .default, for: .zero)
            loop.run(in: "other", for: .zero)
            #expect(loop.contains(sources[0]) && !loop.contains(sources[0], in: "other"))
            #expect(!loop.contains(sources[1]) && loop.contains(sources[1], in: "other"))
            for source in sources { source.invalidate() }
            #expect(!sources.contains { loop.contains($0) || loop.contains($0, in: "other") })
        }
        #expect(performed.all == [0, 2, 4, 5, 1])
    }
}
