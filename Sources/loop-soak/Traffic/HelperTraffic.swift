import Glibc
import RunLoopKit
import SplitMix64
import Synchronization

/// The helpers built on the core, fed from a driver thread: a `PassWorkQueue`, a `CommitBeforeSleep` and a
/// `PhaseTaskScheduler` on the first hub, and a `StallMonitor` watching the second.
///
/// Checks: every task enqueued runs once, in order; every update marked is committed once, in order; every phase
/// task runs once, in order among tasks of its phase. Stall reports (1 s threshold) are counted, not failed: on a
/// loaded machine a hub may be preempted that long, and that is what the monitor is for.
final class HelperTraffic: Workload {
    private let queue: PassWorkQueue
    private let committer: CommitBeforeSleep<Int>
    private let scheduler: PhaseTaskScheduler
    private let monitor: StallMonitor
    private let tasks: Channel
    private let updates: Channel
    private let phases: [(LoopPhase, [Loop.Mode], Channel)]
    private let driver = DriverThread()
    private let seed: UInt64

    /// Helpers on `hubs[0]` and a monitor of `hubs[1]`; `seed` drives the driver's choices.
    init(hubs: [Hub], seed: UInt64) throws {
        self.seed = seed
        let hub = hubs[0]
        let taskTally = Tallies.shared.make("helpers: PassWorkQueue tasks", promise: "each runs once, in order")
        let updateTally = Tallies.shared.make(
            "helpers: CommitBeforeSleep updates", promise: "each committed once, in order")
        let phaseTally = Tallies.shared.make(
            "helpers: PhaseTaskScheduler tasks", promise: "each runs once, in order per phase")
        let stalls = Tallies.shared.make("helpers: StallMonitor reports (1 s)", promise: nil)
        tasks = Channel("helpers → PassWorkQueue of \(hub.name)", tally: taskTally, strictOrder: true)
        updates = Channel("helpers → CommitBeforeSleep of \(hub.name)", tally: updateTally, strictOrder: true)
        // One channel per phase and mode list: tasks of one phase keep their order among those a pass can run (a
        // nested run in the second common mode runs `.common` tasks, not `.default` ones).
        phases = [LoopPhase.nextPassBegins, .currentPassEnds, .idle].flatMap { phase in
            [[Loop.Mode.common], [.default]].map { modes in
                let label = "helpers → \(phase) tasks in \(modes) of \(hub.name)"
                return (phase, modes, Channel(label, tally: phaseTally, strictOrder: true))
            }
        }
        queue = try PassWorkQueue(loop: hub.loop, tasksPerPass: 8)
        let updates = updates
        committer = try CommitBeforeSleep<Int>(loop: hub.loop) { batch in
            for sequence in batch { updates.receive(sequence) }
        }
        scheduler = try PhaseTaskScheduler(loop: hub.loop)
        monitor = try StallMonitor(loop: hubs[1].loop, threshold: .seconds(1), consecutiveChecks: 4) { report in
            stalls.deliver()
            StandardError.print("loop-soak: stall report (counted, not a failure): \(report)")
        }
    }

    func start(_ control: RunControl) throws {
        driver.start("helpers", control: control, seed: seed) { [self] _, random in round(&random) }
    }

    func join() {
        driver.join()
    }

    func tearDown() {
        monitor.stop()
        queue.invalidate()
        committer.invalidate()
        scheduler.invalidate()
    }

    private func round(_ random: inout SplitMix64) {
        for _ in 0..<32 {
            let task = tasks.reserve()
            if !queue.enqueue({ [tasks] in tasks.receive(task) }) {
                tasks.refuse(task)
                Violations.shared.record("helpers: the PassWorkQueue refused a task")
            }
            let update = updates.reserve()
            if !committer.mark(update) {
                updates.refuse(update)
                Violations.shared.record("helpers: CommitBeforeSleep refused an update")
            }
            let (phase, modes, channel) = phases.randomElement(using: &random)!
            let sequence = channel.reserve()
            if !scheduler.schedule(at: phase, in: modes, { channel.receive(sequence) }) {
                channel.refuse(sequence)
                Violations.shared.record("helpers: the PhaseTaskScheduler refused a task")
            }
        }
        let all = [tasks, updates] + phases.map(\.2)
        if !Waiting.until(Waiting.deadline(in: Limits.delivery), { all.allSatisfy(\.isComplete) }) {
            for channel in all { channel.verifyComplete("\(Limits.deliverySeconds) s after the round's posts") }
        }
    }
}
