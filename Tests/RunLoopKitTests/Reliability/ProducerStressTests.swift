import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Four producer threads signal one custom source and post blocks to one loop while it runs, switches between
/// two common modes and runs nested: every block runs exactly once in per-producer order, and no signal is left
/// without a perform after it.
@Suite struct ProducerStressTests {
    /// Loop-thread bookkeeping of the blocks seen (only the loop's thread touches it).
    final class Ledger: @unchecked Sendable {
        var next: [Int]
        var ran = 0
        var outOfOrder = 0
        var performs = 0
        var nestedRuns = 0
        init(producers: Int) { next = Array(repeating: 0, count: producers) }
    }

    @Test func producersSignalAndPostWhileTheLoopSwitchesModesAndNests() {
        let producers = 4
        let posts = Reliability.size(1_000_000, soak: 5_000_000)
        let perProducer = posts / producers
        let otherMode: Loop.Mode = "stress-second"
        let ledger = Ledger(producers: producers)
        let signals = Atomic<Int>(0)
        /// The signal count the last perform saw (read after the loop cleared the signalled flag).
        let seenAtLastPerform = Atomic<Int>(-1)
        let producersDone = Atomic<Int>(0)
        let start = Loop.Instant.now

        let (loop, thread) = startLoopThread { loop in
            loop.addCommonMode(otherMode)
            let source = LoopSource { _ in
                ledger.performs += 1
                seenAtLastPerform.store(signals.load(ordering: .sequentiallyConsistent), ordering: .relaxed)
                if ledger.performs % 8 == 0 {
                    ledger.nestedRuns += 1
                    let mode = Loop.current.currentMode == otherMode ? Loop.Mode.default : otherMode
                    Loop.current.run(in: mode, for: ledger.performs % 16 == 0 ? .zero : .milliseconds(1))
                }
            }
            try! loop.add(source, to: .common)
            try! loop.add(ItemsSupport.keepAlive(), to: .common)
            sourceBox.value = source
            let deadline = Loop.Instant.now + .seconds(120)
            var round = 0
            while Loop.Instant.now < deadline {
                let finished = producersDone.load(ordering: .acquiring) == producers && ledger.ran == posts
                if finished && !source.isSignalled { break }
                loop.run(in: round % 2 == 0 ? .default : otherMode, for: .milliseconds(5))
                round += 1
            }
            // One more pass: a signal the loop had not seen yet would be performed now.
            loop.run(in: .default, for: .zero)
            source.invalidate()
        }
        _ = waitUntil { sourceBox.value != nil }
        let source = sourceBox.value!
        var threads: [TestThread] = []
        for producer in 0..<producers {
            threads.append(
                TestThread {
                    for index in 0..<perProducer {
                        signals.add(1, ordering: .sequentiallyConsistent)
                        source.signal()
                        if index % 128 == 0 {
                            // Now and then wait for the perform, so the loop goes to sleep and is woken often.
                            _ = waitUntil(timeout: .seconds(10)) { !source.isSignalled }
                        }
                        loop.perform(in: .common) {
                            if ledger.next[producer] != index { ledger.outOfOrder += 1 }
                            ledger.next[producer] = index + 1
                            ledger.ran += 1
                        }
                    }
                    producersDone.add(1, ordering: .releasing)
                })
        }
        for producer in threads { producer.join() }
        thread.join()
        let elapsed = Loop.Instant.now - start

        #expect(ledger.ran == posts)
        #expect(ledger.outOfOrder == 0)
        #expect(ledger.next == Array(repeating: perProducer, count: producers))
        #expect(ledger.performs >= 1)
        #expect(seenAtLastPerform.load(ordering: .relaxed) == signals.load(ordering: .relaxed))
        #expect(!source.isSignalled || !source.isValid)
        Reliability.report(
            "producers: \(posts) posts + signals by \(producers) threads, \(ledger.performs) performs, "
                + "\(ledger.nestedRuns) nested runs, \(elapsed)")
    }

    private let sourceBox = Box<LoopSource>()
}
