import RunLoopKit
import Synchronization

/// `await thread.run { }` and `await loop.run(in:) { }` from an actor whose executor is a `LoopThread`'s loop: the
/// task runs on that thread, suspends while a hub runs the closure, and is resumed on its thread again (no global
/// executor thread is involved).
///
/// Checks: each closure runs once and its value comes back to the awaiting task.
final class AsyncTraffic: Workload {
    private let hubs: [Hub]
    private let viaThread: Tally
    private let viaLoop: Tally
    private let home = Mutex<LoopThread?>(nil)
    private let finished = Atomic<Bool>(false)

    /// Calls into the hubs of `hubs`.
    init(hubs: [Hub]) {
        self.hubs = hubs
        viaThread = Tallies.shared.make("async: await LoopThread.run", promise: "each runs once, value returned")
        viaLoop = Tallies.shared.make("async: await Loop.run(in: .common)", promise: "each runs once, value returned")
    }

    func start(_ control: RunControl) throws {
        let name = "async"
        control.register(name)
        let thread = try LoopThread(name: name)
        home.withLock { $0 = thread }
        let caller = Caller(home: thread, hubs: hubs, viaThread: viaThread, viaLoop: viaLoop)
        thread.perform { [self] in
            caller.assumeIsolated { caller in
                caller.begin(control, name: name) { self.finished.store(true, ordering: .releasing) }
            }
        }
    }

    func join() {
        if !Waiting.until(Waiting.deadline(in: Limits.delivery), { finished.load(ordering: .acquiring) }) {
            Violations.shared.record(
                "async: the actor's task did not end within \(Limits.deliverySeconds) s of the stop")
        }
        home.withLock { $0 }?.stop()
    }

    func tearDown() {}

    /// The actor that awaits the hubs, isolated to the `async` loop thread.
    private actor Caller {
        nonisolated let home: LoopThread
        let hubs: [Hub]
        let viaThread: [Channel]
        let viaLoop: [Channel]

        nonisolated var unownedExecutor: UnownedSerialExecutor { home.loop.asUnownedSerialExecutor() }

        init(home: LoopThread, hubs: [Hub], viaThread: Tally, viaLoop: Tally) {
            self.home = home
            self.hubs = hubs
            self.viaThread = hubs.map {
                Channel("async → \($0.name) via LoopThread.run", tally: viaThread, strictOrder: true)
            }
            self.viaLoop = hubs.map { Channel("async → \($0.name) via Loop.run", tally: viaLoop, strictOrder: true) }
        }

        /// Starts the task, on this actor's executor; `ended` runs when it finishes.
        func begin(_ control: RunControl, name: String, ended: @escaping @Sendable () -> Void) {
            Task {
                while control.checkpoint(name) { await self.round() }
                ended()
            }
        }

        private func round() async {
            for (index, hub) in hubs.enumerated() {
                for _ in 0..<16 {
                    await call(viaThread[index]) { try await hub.thread.run($0) }
                    await call(viaLoop[index]) { try await hub.loop.run(in: .common, $0) }
                }
            }
        }

        /// One numbered call through `route`: the closure records its arrival and answers its number.
        private func call(
            _ channel: Channel, _ route: (@escaping @Sendable () throws -> Int) async throws -> Int
        ) async {
            let sequence = channel.reserve()
            do {
                let answer = try await route {
                    channel.receive(sequence)
                    return sequence
                }
                if answer != sequence { Violations.shared.record("\(channel.label): answered \(answer)") }
            } catch {
                channel.refuse(sequence)
                Violations.shared.record("\(channel.label): threw \(error)")
            }
        }
    }
}
