import Glibc
import Synchronization
import Testing

@testable import RunLoopKit

/// One-shot timers added, re-armed and invalidated from the loop's thread and from other threads while timers
/// fire: none fires after `invalidate()` returned on the loop's thread, none fires twice, none that stays valid
/// is lost.
@Suite struct TimerStressTests {
    /// Per-timer fire counts and flags; written by the loop thread, read after it is joined.
    final class Ledger: Sendable {
        let fires: Locked<[Int]>
        /// Set on the loop's thread right after `invalidate()` returned there.
        let invalidatedOnLoop: Locked<[Bool]>
        let firedAfterInvalidate = Atomic<Int>(0)
        init(count: Int) {
            fires = Locked(Array(repeating: 0, count: count))
            invalidatedOnLoop = Locked(Array(repeating: false, count: count))
        }
        func fireCount(_ index: Int) -> Int { fires.withLock { $0[index] } }
    }

    /// What happens to timer `index`: 0 nothing, 1 re-armed from another thread, 2 invalidated on the loop's
    /// thread, 3 invalidated from another thread; even-numbered batches are added from the loop's thread.
    static func kind(_ index: Int) -> Int { index % 4 }

    @Test func timersAddedRearmedAndInvalidatedFromEverywhereWhileFiring() {
        let count = Reliability.size(40_000, soak: 400_000)
        let ledger = Ledger(count: count)
        let timers = Locked<[LoopTimer?]>(Array(repeating: nil, count: count))
        let start = Loop.Instant.now
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(60))
        let loop = running.loop

        @Sendable func makeTimer(_ index: Int) -> LoopTimer {
            let delay = Duration.microseconds(Int64(index % 50) * 40)
            let timer = try! LoopTimer(after: delay) { _ in
                if ledger.invalidatedOnLoop.withLock({ $0[index] }) {
                    ledger.firedAfterInvalidate.add(1, ordering: .relaxed)
                }
                ledger.fires.withLock { $0[index] += 1 }
            }
            timers.withLock { $0[index] = timer }
            return timer
        }

        let batch = 100
        let workers = (0..<2).map { worker in
            TestThread {
                var random = SplitMix64(seed: UInt64(worker) + 7)
                for first in stride(from: worker * batch, to: count, by: 2 * batch) {
                    let range = first..<min(first + batch, count)
                    if (first / batch) % 4 < 2 {
                        for index in range { try! loop.add(makeTimer(index)) }
                    } else {
                        let made = Box<Bool>(false)
                        loop.perform {
                            for index in range { try! Loop.current.add(makeTimer(index)) }
                            made.value = true
                        }
                        _ = waitUntil { made.value == true }
                    }
                    for index in range {
                        let timer = timers.withLock { $0[index] }!
                        switch Self.kind(index) {
                        case 1:
                            for _ in 0..<random.below(3) + 1 {
                                timer.setNextFireTime(.now + .microseconds(Int64(random.below(2_000))))
                            }
                        case 2:
                            loop.perform {
                                timer.invalidate()
                                ledger.invalidatedOnLoop.withLock { $0[index] = true }
                            }
                        case 3:
                            if random.chance(50) { usleep(UInt32(random.below(300))) }
                            timer.invalidate()
                        default:
                            break
                        }
                    }
                }
            }
        }
        for worker in workers { worker.join() }
        let settled = waitUntil(timeout: .seconds(30)) {
            (0..<count).allSatisfy { index in
                Self.kind(index) >= 2 || ledger.fireCount(index) == 1
            }
        }
        running.finish()
        let elapsed = Loop.Instant.now - start

        #expect(settled)
        #expect(ledger.firedAfterInvalidate.load(ordering: .relaxed) == 0)
        let counts = ledger.fires.withLock { $0 }
        let lost = (0..<count).filter { Self.kind($0) < 2 && counts[$0] != 1 }
        let twice = (0..<count).filter { counts[$0] > 1 }
        #expect(lost.isEmpty, "timers that stayed valid fired \(lost.prefix(10).map { counts[$0] }) times")
        #expect(twice.isEmpty, "one-shot timers fired more than once: \(twice.prefix(10))")
        let invalidatedFired = (0..<count).filter { Self.kind($0) >= 2 && counts[$0] == 1 }.count
        Reliability.report(
            "timers: \(count) one-shot timers, \(invalidatedFired) of \(count / 2) invalidated ones fired first, "
                + "\(elapsed)")
    }
}
