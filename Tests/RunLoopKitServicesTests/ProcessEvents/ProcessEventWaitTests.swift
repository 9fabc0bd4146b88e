import Glibc
import RunLoopKit
import TestSupport
import Testing

@testable import RunLoopKitServices

/// The `async` forms of the process-event sources: `await` a child's exit, `for try await` a signal's deliveries;
/// cancelling the task removes the item.
@Suite struct ProcessEventWaitTests {
    @Test func awaitingAChildsExitAnswersHowItEnded() async throws {
        // A generous run time: under a sanitizer, in the full suite, the awaiting task can start 20 s late (the
        // default would let the loop's thread exit first: `loopTerminated`, seen once under ThreadSanitizer).
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(120))
        defer { running.finish() }
        let exited = try await running.loop.waitForExit(of: ChildProcess.exiting(with: 3))
        #expect(exited == .exited(code: 3))
        let sleeper = ChildProcess.sleeping()
        let waiting = Task { try await running.loop.waitForExit(of: sleeper) }
        kill(sleeper, SIGKILL)
        #expect(try await waiting.value == .signalled(signal: SIGKILL, coreDumped: false))
        #expect(ChildProcess.isReaped(sleeper))
    }

    @Test func cancellingTheWaitRemovesTheSource() async throws {
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(120))
        defer { running.finish() }
        // Sleeps far longer than any wait below (killed at the end): under ThreadSanitizer the task once started
        // after a 30 s sleeper had exited, and the wait then answered at once.
        let sleeper = ChildProcess.sleeping(seconds: 600)
        defer { ChildProcess.killAndReap(sleeper) }
        let before = running.loop.itemCounts(in: .default).descriptorSources
        let waiting = await Self.startWaitingForExit(of: sleeper, on: running.loop)
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(await awaitCondition { running.loop.itemCounts(in: .default).descriptorSources == before })
    }

    /// The loop's thread exits while the wait is pending: the loop releases the wait's source, and the wait throws
    /// `loopTerminated` instead of waiting for good (the source alone stays valid, as every item does).
    @Test(.timeLimit(.minutes(2))) func aWaitWhoseLoopsThreadExitsThrowsLoopTerminated() async throws {
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(120))
        let sleeper = ChildProcess.sleeping(seconds: 600)
        defer { ChildProcess.killAndReap(sleeper) }
        let waiting = await Self.startWaitingForExit(of: sleeper, on: running.loop)
        running.finish()  // The loop's thread exits.
        await #expect { try await waiting.value } throws: { ($0 as? LoopError)?.code == .loopTerminated }
        #expect(!ChildProcess.isReaped(sleeper))
    }

    /// Starts a task waiting for `pid`'s exit on `loop`, and waits until the wait's source has joined the loop.
    private static func startWaitingForExit(
        of pid: pid_t, on loop: Loop
    ) async -> Task<ChildExitStatus, any Error> {
        let before = loop.itemCounts(in: .default).descriptorSources
        let waiting = Task { try await loop.waitForExit(of: pid) }
        // The pidfd's source joins the loop once the task runs. A generous deadline: in the full suite, other tests'
        // blocking waits can hold both cooperative threads of a 2-CPU machine for seconds before the task starts.
        let joined = await awaitCondition(timeout: .seconds(120)) {
            loop.itemCounts(in: .default).descriptorSources == before + 1
        }
        #expect(joined, "the wait's source never joined: \(loop.itemCounts(in: .default))")
        return waiting
    }

    @Test func waitingForANonChildThrows() async {
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        await #expect(throws: LoopError.self) { try await running.loop.waitForExit(of: 1) }
    }

    /// Signals are process-wide: each scenario runs in an exit-test child.
    @Test func everyDeliveryArrivesAndCancellationRemovesTheSource() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let running = SignalSupport.startLoop(unblocking: [SIGUSR2])
            let counted = Counter()
            let consumer = Task {
                for try await count in running.loop.signals(SIGUSR2) {
                    for _ in 0..<count { counted.increment() }
                }
            }
            SignalSupport.check(
                await awaitCondition { running.loop.itemCounts(in: .default).descriptorSources >= 1 },
                "the source was never added"
            )
            for sent in 1...3 {
                SignalSupport.sendToSelf(SIGUSR2)
                SignalSupport.check(await awaitCondition { counted.current == sent }, "delivery \(sent) never arrived")
            }
            let sourcesWhileWatching = running.loop.itemCounts(in: .default).descriptorSources
            consumer.cancel()
            _ = await consumer.result
            SignalSupport.check(
                await awaitCondition {
                    running.loop.itemCounts(in: .default).descriptorSources == sourcesWhileWatching - 1
                },
                "the signal source outlived the cancelled iteration")
            running.finish()
            print("verdict: ok")
            exit(0)
        }
        #expect(SignalSupport.output(result).contains("verdict: ok"))
    }
}
