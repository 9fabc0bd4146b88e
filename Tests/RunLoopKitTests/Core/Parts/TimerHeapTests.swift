import SplitMix64
import Testing

@testable import RunLoopKit

/// The timer heap, holding timers only, against a sorted reference, and at scale (through the ``TimerTable`` that
/// owns it, as the loop uses it).
@Suite struct TimerHeapTests {
    /// A timer with its heap key set directly (the heap orders by `latest`, then `sequence`).
    static func timer(latest: Int64, sequence: UInt64) -> LoopTimer {
        let timer = try! LoopTimer(at: Loop.Instant(nanoseconds: latest)) { _ in }
        timer.latestFireTime = latest
        timer.sequence = sequence
        return timer
    }

    static func precedes(_ a: LoopTimer, _ b: LoopTimer) -> Bool {
        a.latestFireTime != b.latestFireTime ? a.latestFireTime < b.latestFireTime : a.sequence < b.sequence
    }

    @Test(arguments: [1 as UInt64, 2, 3, 42])
    func randomOperationsMatchASortedReference(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var heap = TimerTable()
        var reference: [LoopTimer] = []
        var sequence: UInt64 = 0
        for step in 0..<5_000 {
            let choice = Int.random(in: 0..<10, using: &random)
            if choice < 5 || reference.isEmpty {
                // Few distinct keys, so ties (broken by sequence) are common.
                let timer = Self.timer(latest: Int64.random(in: 0..<50, using: &random), sequence: sequence)
                sequence += 1
                heap.insert(timer)
                let index = reference.firstIndex { Self.precedes(timer, $0) } ?? reference.endIndex
                reference.insert(timer, at: index)
            } else if choice < 8 {
                let victim = reference.remove(at: Int.random(in: 0..<reference.count, using: &random))
                heap.remove(victim)
                #expect(victim.heapIndex == -1)
            } else {
                let first = heap.popFirst()
                #expect(first === reference.removeFirst(), "step \(step)")
            }
            heap.checkInvariants()
            #expect(heap.count == reference.count)
            #expect(heap.first === reference.first)
        }
        while let next = heap.popFirst() {
            #expect(next === reference.removeFirst())
        }
        #expect(reference.isEmpty && heap.isEmpty)
    }

    @Test func repositioningByRemoveAndInsertKeepsOrder() {
        var heap = TimerTable()
        let timers = (0..<100).map { Self.timer(latest: Int64(100 - $0), sequence: UInt64($0)) }
        for timer in timers { heap.insert(timer) }
        // Move every even timer to the far end, as rescheduling does.
        var sequence: UInt64 = 1_000
        for timer in timers where timer.latestFireTime % 2 == 0 {
            heap.remove(timer)
            timer.latestFireTime += 1_000
            timer.sequence = sequence
            sequence += 1
            heap.insert(timer)
            heap.checkInvariants()
        }
        var previous: LoopTimer?
        while let next = heap.popFirst() {
            if let previous { #expect(Self.precedes(previous, next)) }
            previous = next
        }
    }

    #if DEBUG
    /// Debug builds: one million timers take about 9 s here, so a fifth of that.
    static let manyTimers = 200_000
    #else
    static let manyTimers = 1_000_000
    #endif

    /// Many timers (a million in release builds) inserted, a third removed from the middle, the rest drained in order.
    @Test func manyTimersInsertedAndRemoved() {
        let count = Self.manyTimers
        var random = SplitMix64(seed: 7)
        var heap = TimerTable()
        var timers: [LoopTimer] = []
        timers.reserveCapacity(count)
        for index in 0..<count {
            let timer = Self.timer(latest: Int64.random(in: 0..<1_000_000_000, using: &random), sequence: UInt64(index))
            timers.append(timer)
            heap.insert(timer)
        }
        #expect(heap.count == count)
        for index in stride(from: 0, to: count, by: 3) {
            heap.remove(timers[index])
        }
        heap.checkInvariants()
        var drained = 0
        var previous: LoopTimer?
        var ordered = true
        while let next = heap.popFirst() {
            if let previous, !Self.precedes(previous, next) { ordered = false }
            previous = next
            drained += 1
        }
        #expect(ordered)
        #expect(drained == count - (count + 2) / 3)
        #expect(heap.isEmpty)
    }
}

extension TimerTable {
    var count: Int { heap.count }
    var isEmpty: Bool { heap.isEmpty }

    /// The first timer (the heap holds timers only in these tests).
    var first: LoopTimer? { heap.first.map { $0.timerReference.takeUnretainedValue() } }

    /// Removes and returns the first timer (the loop itself takes due entries one by one with `takeFirstAsDue`).
    mutating func popFirst() -> LoopTimer? {
        guard let top = first else { return nil }
        remove(top)
        return top
    }
}
