import RunLoopKit
import SplitMix64
import Synchronization

/// One-shot callbacks (`Loop.schedule(after:)`, `schedule(at:)`, `cancel`): scheduled on the hubs from a driver
/// thread (a quarter cancelled from there at once) and from blocks on the hubs' own threads (some cancelled there,
/// some scheduling a further callback when they run).
///
/// Checks: a callback runs at most once, never before its fire time; one never cancelled runs exactly once; one
/// cancelled on the loop's thread never runs; one cancelled from another thread may still run (once).
final class CallbackTraffic: Workload {
    private let hubs: [Hub]
    private let seed: UInt64
    private let driver = DriverThread()
    private let scheduled: Tally
    private let cancelledFromDriver: Tally
    private let ranAfterCancel: Tally
    private let cancelledOnHub: Tally

    /// Callbacks on the hubs of `hubs`; `seed` drives the driver's choices.
    init(hubs: [Hub], seed: UInt64) {
        self.hubs = hubs
        self.seed = seed
        scheduled = Tallies.shared.make("callbacks: scheduled", promise: "each runs once, never early")
        cancelledFromDriver = Tallies.shared.make("callbacks: cancelled from another thread", promise: nil)
        ranAfterCancel = Tallies.shared.make("callbacks: ... ran before that cancel arrived", promise: nil)
        cancelledOnHub = Tallies.shared.make("callbacks: cancelled on the hub", promise: nil)
    }

    func start(_ control: RunControl) throws {
        driver.start("callbacks", control: control, seed: seed) { [self] _, random in round(&random) }
    }

    func join() {
        driver.join()
    }

    func tearDown() {}

    private func round(_ random: inout SplitMix64) {
        var mustRun: [Ticket] = []
        var mustNotRun: [Ticket] = []
        for _ in 0..<16 {
            let hub = hubs.randomElement(using: &random)!
            let mode = [Loop.Mode.default, .common, Hub.nestedMode].randomElement(using: &random)!
            let delay = Duration.microseconds(Int.random(in: 0...10_000, using: &random))
            let tolerance = [Duration.zero, .milliseconds(1), .milliseconds(3)].randomElement(using: &random)!
            let fireTime = Loop.Instant.now + delay
            let cancel = random.oneIn(4)
            let ticket = Ticket(notBefore: fireTime, tally: cancel ? ranAfterCancel : scheduled)
            do {
                let callback =
                    random.oneIn(2)
                    ? try hub.loop.schedule(at: fireTime, tolerance: tolerance, in: mode) { ticket.ran() }
                    : try hub.loop.schedule(after: delay, tolerance: tolerance, in: mode) { ticket.ran() }
                if cancel {
                    hub.loop.cancel(callback)
                    cancelledFromDriver.deliver()
                } else {
                    scheduled.expect()
                    mustRun.append(ticket)
                }
            } catch {
                Violations.shared.record("callbacks: schedule on \(hub.name) threw \(error)")
            }
        }
        for hub in hubs {
            var plans: [(Ticket, chained: Ticket?, cancel: Bool, delay: Duration)] = []
            for index in 0..<8 {
                let delay = Duration.microseconds(Int.random(in: 0...8_000, using: &random))
                let cancel = index < 3
                let chained = index >= 6 ? Ticket(notBefore: .now, tally: scheduled) : nil
                let ticket = Ticket(notBefore: .now + delay, tally: cancel ? nil : scheduled)
                plans.append((ticket, chained, cancel, delay))
                if cancel { mustNotRun.append(ticket) } else { mustRun.append(ticket) }
                if let chained { mustRun.append(chained) }
            }
            let expected = plans.filter { !$0.cancel }.count + plans.filter { $0.chained != nil }.count
            scheduled.expect(expected)
            let planned = plans
            do {
                try hub.thread.performAndWait { Self.scheduleOnHub(planned) }
            } catch {
                Violations.shared.record("callbacks: performAndWait on \(hub.name) threw \(error)")
            }
            cancelledOnHub.deliver(plans.filter(\.cancel).count)
        }
        let deadline = Waiting.deadline(in: Limits.delivery)
        if !Waiting.until(deadline, { mustRun.allSatisfy { $0.runs >= 1 } }) {
            let missing = mustRun.filter { $0.runs == 0 }.count
            Violations.shared.record(
                "callbacks: \(missing) never-cancelled callbacks had not run \(Limits.deliverySeconds) s later")
        }
        for ticket in mustNotRun where ticket.runs != 0 {
            Violations.shared.record("callbacks: one cancelled on the hub's thread ran")
        }
    }

    /// On a hub's thread: schedules the planned callbacks, cancels those planned for it at once (they must never
    /// run), and makes the chained ones schedule their follower when they run.
    private static func scheduleOnHub(_ plans: [(Ticket, chained: Ticket?, cancel: Bool, delay: Duration)]) {
        let loop = Loop.current
        for (ticket, chained, cancel, delay) in plans {
            do {
                let callback = try loop.schedule(after: delay, in: .common) {
                    ticket.ran()
                    guard let chained else { return }
                    do {
                        try Loop.current.schedule(after: .microseconds(500)) { chained.ran() }
                    } catch {
                        Violations.shared.record("callbacks: scheduling from a callback threw \(error)")
                    }
                }
                if cancel { loop.cancel(callback) }
            } catch {
                Violations.shared.record("callbacks: scheduling on the hub threw \(error)")
            }
        }
    }

    /// One callback's record.
    private final class Ticket: Sendable {
        private let notBefore: Loop.Instant
        private let tally: Tally?
        private let count = Atomic<Int>(0)

        /// A record for a callback due at `notBefore`, counting its run in `tally` (`nil`: it must not run).
        init(notBefore: Loop.Instant, tally: Tally?) {
            self.notBefore = notBefore
            self.tally = tally
        }

        /// How often the callback ran.
        var runs: Int { count.load(ordering: .acquiring) }

        /// The callback: never early, never twice.
        func ran() {
            let now = Loop.Instant.now
            if now < notBefore { Violations.shared.record("callbacks: one ran \(notBefore - now) early") }
            let runs = count.add(1, ordering: .acquiringAndReleasing).newValue
            if runs > 1 { Violations.shared.record("callbacks: one ran \(runs) times") }
            tally?.deliver()
        }
    }
}
