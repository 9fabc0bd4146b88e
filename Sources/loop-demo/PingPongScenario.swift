import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Cross-thread signalling: two threads, each with a custom source (schedule / perform / cancel), signalling each
/// other.
///
/// The main thread puts a command in the worker's buffer and signals the worker's source, which wakes the worker's
/// loop; the worker computes (increments the number) and signals the main thread's source back. A repeating timer
/// on the main loop starts each new round; after the last round both sources are cancelled and the worker's loop,
/// left empty, finishes, so its thread exits.
enum PingPongScenario {
    static let rounds = 5

    static func run() {
        let mainLoop = Loop.main
        let game = Game(mainLoop: mainLoop)
        let mainSource = LoopSource(
            schedule: { _, mode in Trace.line("main", "schedule: main source joined the main loop in \(mode)") },
            cancel: { _, mode in Trace.line("main", "cancel: main source left the main loop in \(mode)") },
            perform: { _ in game.mainPerform() }
        )
        game.setMainSource(mainSource)
        try! mainLoop.add(mainSource)

        let worker = JoinableThread {
            let loop = Loop.current
            let source = LoopSource(
                schedule: { _, mode in
                    Trace.line("worker", "schedule: worker source joined the worker loop in \(mode)")
                    // Like performSelectorOnMainThread: register with the main thread, which sends the first command.
                    Loop.main.perform { game.sendCommand() }
                },
                cancel: { _, mode in Trace.line("worker", "cancel: worker source left the worker loop in \(mode)") },
                perform: { _ in game.workerPerform() }
            )
            game.setWorkerSource(source)
            try! loop.add(source)
            var result: Loop.RunResult
            repeat {
                result = loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true)
            } while result != .stopped && result != .finished
            Trace.line("worker", "worker loop returned \(result): nothing left in its mode, thread exits")
        }

        let timer = try! LoopTimer(after: .milliseconds(100), repeating: .milliseconds(100)) { _ in
            Trace.line("main", "timer: restart the cycle")
            game.sendCommand()
        }
        game.setTimer(timer)
        try! mainLoop.add(timer)

        let result = mainLoop.run(in: .default, for: .seconds(5))
        worker.join()
        Trace.line("main", "main run returned \(result); average round trip \(game.averageRoundTrip) µs")
    }

    /// The two command buffers and the round state, shared by both threads.
    final class Game: Sendable {
        private struct State {
            var mainSource: LoopSource?
            var workerSource: LoopSource?
            var timer: LoopTimer?
            /// Commands for the worker: the number to work on.
            var workerBuffer: [Int] = []
            /// Answers for the main thread: the number computed, and the worker's thread id.
            var mainBuffer: [(Int, Bool)] = []
            var value = 0
            var round = 0
            var sentAt = Loop.Instant(nanoseconds: 0)
            var roundTrips: [Int64] = []
        }

        private let mainLoop: Loop
        private let state = Mutex(State())

        init(mainLoop: Loop) {
            self.mainLoop = mainLoop
        }

        func setMainSource(_ source: LoopSource) { state.withLock { $0.mainSource = source } }
        func setWorkerSource(_ source: LoopSource) { state.withLock { $0.workerSource = source } }
        func setTimer(_ timer: LoopTimer) { state.withLock { $0.timer = timer } }

        var averageRoundTrip: Int64 {
            state.withLock { $0.roundTrips.isEmpty ? 0 : $0.roundTrips.reduce(0, +) / Int64($0.roundTrips.count) }
        }

        /// Main thread: put a command in the worker's buffer, signal its source (which wakes its loop).
        func sendCommand() {
            let (source, round, value) = state.withLock { state -> (LoopSource?, Int, Int) in
                guard state.round < PingPongScenario.rounds, state.workerBuffer.isEmpty else { return (nil, 0, 0) }
                state.round += 1
                state.workerBuffer.append(state.value)
                return (state.workerSource, state.round, state.value)
            }
            guard let source else { return }
            Trace.line("main", "round \(round): command \(value) -> worker buffer, signal the worker's source")
            state.withLock { $0.sentAt = .now }
            source.signal()
        }

        /// Worker thread: compute, answer in the main buffer, signal the main source.
        func workerPerform() {
            let source = state.withLock { state -> LoopSource? in
                guard let command = state.workerBuffer.popLast() else { return nil }
                state.mainBuffer.append((command + 1, Loop.current.isMain))
                return state.mainSource
            }
            source?.signal()
        }

        /// Main thread: take the answer, print the round trip; after the last round, cancel everything.
        func mainPerform() {
            let now = Loop.Instant.now
            let answer = state.withLock { state -> (Int, Bool, Int, Int64)? in
                guard let (value, onMain) = state.mainBuffer.popLast() else { return nil }
                let roundTrip = Trace.microseconds(from: state.sentAt, to: now)
                state.roundTrips.append(roundTrip)
                state.value = value
                return (value, onMain, state.round, roundTrip)
            }
            guard let (value, workerOnMain, round, roundTrip) = answer else { return }
            let thread = workerOnMain ? "the main thread (!)" : "the worker thread"
            Trace.line(
                "main",
                "round \(round): worker computed \(value - 1) + 1 = \(value) on \(thread); "
                    + "round trip \(roundTrip) µs")
            guard round == PingPongScenario.rounds else { return }
            let (timer, workerSource, mainSource) = state.withLock { ($0.timer, $0.workerSource, $0.mainSource) }
            Trace.line("main", "last round: invalidate the timer and the worker's source, remove the main source")
            timer?.invalidate()
            workerSource?.invalidate()
            if let mainSource { mainLoop.remove(mainSource) }
            mainLoop.stop()
        }
    }
}
