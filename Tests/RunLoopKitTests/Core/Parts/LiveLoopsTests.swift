import Glibc
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKit

/// The lock-free table of live loops the `fork()` child handler walks: what is inserted is visited until removed, and
/// threads inserting and removing at once never share a slot and reuse freed ones. The table is the
/// process's own, so other tests' loops are in it too: the checks look at this test's addresses only.
@Suite struct LiveLoopsTests {
    /// Distinct, even addresses that no loop has (never dereferenced).
    final class Addresses: @unchecked Sendable {
        // Unchecked Sendable: the buffer is written by no one; the table only stores and compares the addresses.
        let buffer: UnsafeMutableRawPointer
        let all: [UnsafeMutableRawPointer]

        init(count: Int) {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: 16 * count, alignment: 16)
            self.buffer = buffer
            all = (0..<count).map { buffer + 16 * $0 }
        }

        deinit { buffer.deallocate() }

        /// Those of `all` the table holds now.
        var visited: Set<UnsafeMutableRawPointer> {
            let mine = Set(all)
            var seen: Set<UnsafeMutableRawPointer> = []
            LiveLoops.forEach { if mine.contains($0) { seen.insert($0) } }
            return seen
        }
    }

    /// Registers `address` as a loop's `init` does: a slot reserved first, the address published in it after.
    static func insert(_ address: UnsafeMutableRawPointer) -> Int {
        let slot = LiveLoops.reserve()
        if slot >= 0 { LiveLoops.publish(address, in: slot) }
        return slot
    }

    @Test func aReservedSlotIsVisitedOnlyOnceItsLoopIsPublished() {
        let addresses = Addresses(count: 1)
        let slot = LiveLoops.reserve()
        #expect(slot >= 0)
        #expect(addresses.visited.isEmpty)
        LiveLoops.publish(addresses.all[0], in: slot)
        #expect(addresses.visited == Set(addresses.all))
        LiveLoops.remove(slot)
        #expect(addresses.visited.isEmpty)
    }

    @Test func anInsertedAddressIsVisitedUntilItIsRemoved() {
        let addresses = Addresses(count: 64)
        let slots = addresses.all.map { Self.insert($0) }
        #expect(slots.allSatisfy { $0 >= 0 })
        #expect(Set(slots).count == slots.count)
        #expect(addresses.visited == Set(addresses.all))

        for index in stride(from: 0, to: slots.count, by: 2) { LiveLoops.remove(slots[index]) }
        let odd = stride(from: 1, to: slots.count, by: 2).map { addresses.all[$0] }
        #expect(addresses.visited == Set(odd))

        let again = stride(from: 0, to: slots.count, by: 2).map { Self.insert(addresses.all[$0]) }
        #expect(addresses.visited == Set(addresses.all))

        for slot in again { LiveLoops.remove(slot) }
        for index in stride(from: 1, to: slots.count, by: 2) { LiveLoops.remove(slots[index]) }
        #expect(addresses.visited.isEmpty)
        LiveLoops.remove(-1)  // A loop whose registration failed: nothing to do.
    }

    @Test func threadsInsertingAndRemovingAtOnceNeverShareASlotAndReuseFreedOnes() {
        let threads = 4
        let perThread = 8
        let addresses = Addresses(count: threads * perThread)
        let held = Locked<Set<Int>>([])
        let clashes = Counter()
        let finalSlots = Locked<[Int]>([])
        let workers = (0..<threads).map { thread in
            TestThread {
                var mine = [Int](repeating: -1, count: perThread)
                for round in 0..<20_000 {
                    let index = round % perThread
                    if mine[index] >= 0 {
                        let slot = mine[index]
                        held.withLock { _ = $0.remove(slot) }
                        LiveLoops.remove(slot)
                    }
                    let slot = Self.insert(addresses.all[thread * perThread + index])
                    if !held.withLock({ $0.insert(slot).inserted }) { clashes.increment() }
                    mine[index] = slot
                }
                finalSlots.withLock { $0 += mine }
            }
        }
        for worker in workers { worker.join() }
        #expect(clashes.current == 0)
        // Freed slots are reused: 80,000 inserts with at most 32 of them alive at once stay in the low slots (the
        // process's other loops, a few hundred at most, share them), where slots never reused would reach 80,000.
        let highest = finalSlots.withLock { $0.max() ?? 0 }
        #expect(highest < 10_000, "slot \(highest)")
        #expect(addresses.visited == Set(addresses.all))
        for slot in finalSlots.withLock({ $0 }) { LiveLoops.remove(slot) }
        #expect(addresses.visited.isEmpty)
    }
}
