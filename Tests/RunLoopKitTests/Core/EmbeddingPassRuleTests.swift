import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Docs/Embedding.md's plain `poll()` host, line for line (`if loop.runPass() { continue }`, the host's own condition,
/// then a wait on `pollDescriptor`), checked against the "run another pass" rules (issue 41): work that only a further
/// pass can serve, made on the loop's thread by the host's own code between passes or by a handler of the loop, is
/// served with no other wake-up, every host wait ending because the descriptor became readable. The one change from
/// the document: each wait is bounded by 2 s, and a wait that reaches it fails the test (the document waits for good).
@Suite struct EmbeddingPassRuleTests {
    /// A block that queues the next, a source signalled again in its own perform, a zero-delay timer whose handler
    /// adds the next: each link is made in a pass for a later one (glib-check's and foundation-check's PassChains).
    final class Chains: Sendable {
        static let length = 100
        let blocks = Counter()
        let performs = Counter()
        let timers = Counter()
        let completed = Counter()

        var isDone: Bool { completed.current == 3 }
        var progress: String {
            "blocks \(blocks.current), source performs \(performs.current), timers \(timers.current) of \(Self.length)"
        }

        /// Starts the three chains on `loop`'s thread.
        func start(on loop: Loop) {
            queueBlock(on: loop)
            let source = LoopSource { [self] source in
                performs.increment()
                if performs.current < Self.length {
                    source.signal()
                } else {
                    source.invalidate()
                    completed.increment()
                }
            }
            try! loop.add(source)
            source.signal()
            addTimer(on: loop)
        }

        private func queueBlock(on loop: Loop) {
            _ = loop.perform { [self] in
                blocks.increment()
                if blocks.current < Self.length { queueBlock(on: loop) } else { completed.increment() }
            }
        }

        private func addTimer(on loop: Loop) {
            try! loop.add(
                try! LoopTimer(after: .zero) { [self] _ in
                    timers.increment()
                    if timers.current < Self.length { addTimer(on: loop) } else { completed.increment() }
                })
        }
    }

    /// What the documented host saw.
    struct Outcome: Sendable {
        var done = false
        var progress = ""
        var waits = 0
        var waitsEndedByTimeLimit = 0
    }

    /// Runs Docs/Embedding.md's host on a new thread until the chains are done (or a wait reaches 2 s). `setUp` runs
    /// first on that thread; `betweenPasses` is the host's own code, run once after the first pass that answered
    /// `false` (the loop then counts as asleep). With `descriptorReadOnce`, the host reads `pollDescriptor` once
    /// before its loop and keeps the number, as the document allows: reading it readies the loop for the host's wait,
    /// so the example, which reads it before every wait, would also wait well for a `runPass` that never answered
    /// `true`; a host that keeps the number depends on that answer.
    static func runDocumentedHost(
        descriptorReadOnce: Bool,
        setUp: @escaping @Sendable (Loop, Chains) -> Void, betweenPasses: @escaping @Sendable (Loop, Chains) -> Void
    ) -> Outcome {
        let outcome = Box<Outcome>()
        TestThread {
            let loop = Loop.current  // the host thread's loop
            let chains = Chains()
            setUp(loop, chains)
            var result = Outcome()
            var hostCodeRan = false
            let keptDescriptor = descriptorReadOnce ? loop.pollDescriptor : -1
            while true {
                if loop.runPass() { continue }  // work is ready already: another pass first
                if !hostCodeRan {
                    hostCodeRan = true
                    betweenPasses(loop, chains)
                }
                if chains.isDone { break }  // the host's own condition
                var entry = pollfd(
                    fd: descriptorReadOnce ? keptDescriptor : loop.pollDescriptor, events: Int16(POLLIN), revents: 0)
                result.waits += 1
                if poll(&entry, 1, 2_000) == 0 {  // the document waits for good (-1)
                    result.waitsEndedByTimeLimit += 1
                    break
                }
            }
            result.done = chains.isDone
            result.progress = chains.progress
            outcome.value = result
        }.join()
        return outcome.value!
    }

    /// The host's own code starts the chains between two passes.
    @Test(arguments: [false, true])
    func workMadeByTheHostBetweenPassesIsServedByFurtherPasses(descriptorReadOnce: Bool) {
        let outcome = Self.runDocumentedHost(
            descriptorReadOnce: descriptorReadOnce, setUp: { _, _ in },
            betweenPasses: { loop, chains in chains.start(on: loop) })
        #expect(outcome.done, "\(outcome.progress)")
        #expect(outcome.waitsEndedByTimeLimit == 0, "a host wait ended by its 2 s limit: work was stranded")
    }

    /// A handler of the loop (a 20 ms timer's, in a pass) starts the chains.
    @Test(arguments: [false, true])
    func workMadeByAHandlerIsServedByFurtherPasses(descriptorReadOnce: Bool) {
        let outcome = Self.runDocumentedHost(
            descriptorReadOnce: descriptorReadOnce,
            setUp: { loop, chains in
                try! loop.add(try! LoopTimer(after: .milliseconds(20)) { _ in chains.start(on: loop) })
            }, betweenPasses: { _, _ in })
        #expect(outcome.done, "\(outcome.progress)")
        #expect(outcome.waitsEndedByTimeLimit == 0, "a host wait ended by its 2 s limit: work was stranded")
    }
}
