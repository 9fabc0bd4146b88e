import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Cancellation racing the event, many times over: every wait must resume exactly once (a second resume of a
/// checked continuation traps; a missing one hangs the task past its deadline) with either its value or
/// `CancellationError`, and leave no item, registration or timer behind.
@Suite("Async waits: cancel versus fire races", .timeLimit(.minutes(5)))
struct AsyncCancellationRaceTests {
    static let iterations = 1_000

    /// The outcomes of one race series.
    struct Tally: CustomStringConvertible {
        var fired = 0
        var cancelled = 0
        var other: [String] = []

        mutating func record<Success>(_ result: Result<Success, any Error>?) {
            switch result {
            case .success: fired += 1
            case .failure(let error) where error is CancellationError: cancelled += 1
            case .failure(let error): other.append("\(error)")
            case nil: other.append("no result")
            }
        }

        var description: String { "fired \(fired), cancelled \(cancelled), other \(other.count)" }
    }

    /// A short, varying delay before cancelling, so the cancellation lands before, during and after the event.
    static func stagger(_ iteration: Int) async {
        switch iteration % 4 {
        case 0: break
        case 1: await Task.yield()
        case 2: for _ in 0..<(iteration % 50) { _ = sched_yield() }
        default: try? await Task.sleep(for: .microseconds(iteration % 200))
        }
    }

    /// Runs the race `iterations` times: `start` begins a wait, `trigger` makes its event happen, a staggered
    /// cancel follows, `reset` undoes the event. Expects every wait to end exactly once, fired or cancelled, and
    /// answers the tally (reported under `name`).
    static func race<Success: Sendable>(
        _ name: String,
        start: () -> Task<Success, any Error>,
        trigger: () -> Void = {},
        reset: () -> Void = {}
    ) async -> Tally {
        var tally = Tally()
        for iteration in 0..<iterations {
            let task = start()
            trigger()
            await stagger(iteration)
            task.cancel()
            tally.record(await AsyncSupport.result(of: task))
            reset()
        }
        AsyncSupport.report("\(name): \(tally)")
        #expect(tally.other.count == 0, "\(tally.other.prefix(3))")
        #expect(tally.fired + tally.cancelled == iterations, "\(tally)")
        return tally
    }

    @Test func sleepVersusCancel() async throws {
        let worker = try LoopThread(name: "race-sleep")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        _ = await Self.race(#function, start: { Task { try await worker.loop.clock.sleep(for: .zero) } })
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }

    @Test func descriptorWaitVersusCancel() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "race-fd")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        _ = await Self.race(
            #function,
            start: { Task { try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable) } },
            trigger: { pipe.write() }, reset: { pipe.drain() })
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }

    @Test func loopRunVersusCancel() async throws {
        let worker = try LoopThread(name: "race-run")
        defer { worker.stop() }
        let ran = Counter()
        let tally = await Self.race(#function, start: { Task { try await worker.loop.run { ran.increment() } } })
        // CancellationError means the work never ran; every other outcome ran it exactly once.
        #expect(await AsyncSupport.eventually { AsyncSupport.pendingBlockCount(of: worker) == 0 })
        #expect(ran.current == tally.fired)
    }

    @Test func readinessNextVersusCancel() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "race-seq")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let readiness = worker.loop.readiness(of: pipe.readEnd)
        _ = await Self.race(
            #function,
            start: {
                Task {
                    var iterator = readiness.makeAsyncIterator()
                    return try await iterator.next()
                }
            },
            trigger: { pipe.write() }, reset: { pipe.drain() })
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }
}
