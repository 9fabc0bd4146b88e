import RunLoopKit
import SplitMix64
import Synchronization

/// `LoopTimer`s: one-shot timers with tolerances added to the hubs from a driver thread, some re-armed or
/// invalidated from that thread, some invalidated on the hub's thread, some re-armed by their own handler; and
/// long-lived repeating timers, re-armed and replaced from the driver thread now and then.
///
/// Checks: a one-shot fires exactly once (twice when its handler re-arms it; once more when the driver's re-arm
/// found it fired already, and then for the re-armed time), never before the time it fires for;
/// invalidated on the loop's thread it never fires afterwards, from another thread at most once more. A repeating
/// timer never fires early, its fire times only increase and stay on its grid (interval steps) except for a
/// re-armed time, and it fires at most once more after `invalidate()` returned on another thread.
final class TimerTraffic: Workload {
    /// What happens to a one-shot timer after it is added.
    private enum Plan: CaseIterable {
        case plain, rearmedFromDriver, rearmedByHandler, invalidatedFromDriver, invalidatedOnHub
    }

    private let hubs: [Hub]
    private let seed: UInt64
    private let driver = DriverThread()
    /// Repeating timers replaced in the last round, checked in the next one (they must stay silent). Driver only.
    private let retired = Mutex<[Repeating]>([])
    private let oneShots: Tally
    private let rearmedByHandler: Tally
    private let rearmedAfterFiring: Tally
    private let invalidatedFromDriver: Tally
    private let invalidatedOnHub: Tally
    private let firedBeforeInvalidation: Tally
    private let repeatingFires: Tally
    private let repeatingReplaced: Tally
    private let repeating = Mutex<[Repeating]>([])

    /// Timers on the hubs of `hubs`; `seed` drives the driver's choices.
    init(hubs: [Hub], seed: UInt64) {
        self.hubs = hubs
        self.seed = seed
        oneShots = Tallies.shared.make("timers: one-shot", promise: "each fires once, never early")
        rearmedByHandler = Tallies.shared.make("timers: one-shot re-armed by its handler", promise: "fires twice")
        rearmedAfterFiring = Tallies.shared.make(
            "timers: ... fired again: re-armed after firing", promise: nil)
        invalidatedFromDriver = Tallies.shared.make("timers: one-shot invalidated from another thread", promise: nil)
        invalidatedOnHub = Tallies.shared.make("timers: one-shot invalidated on the hub", promise: nil)
        firedBeforeInvalidation = Tallies.shared.make("timers: ... fired before their invalidation", promise: nil)
        repeatingFires = Tallies.shared.make("timers: repeating fires", promise: nil)
        repeatingReplaced = Tallies.shared.make("timers: repeating replaced", promise: nil)
    }

    func start(_ control: RunControl) throws {
        var setupRandom = SplitMix64(seed: seed)
        for hub in hubs {
            for mode in [Loop.Mode.default, .common, Hub.privateMode] {
                let timer = try Repeating(hub: hub, mode: mode, random: &setupRandom, fires: repeatingFires)
                repeating.withLock { $0.append(timer) }
            }
        }
        driver.start(
            "timers", control: control, seed: seed &+ 1,
            round: { [self] round, random in
                oneShotRound(&random)
                verifyRetired()
                if round % 5 == 0 {
                    repeating.withLock { $0[(round / 5) % $0.count] }.rearm(&random)
                }
                if round % 10 == 0 {
                    let replaced = replaceRepeating(at: round / 10, &random)
                    retired.withLock { $0.append(replaced) }
                }
            },
            finally: { [self] in verifyRetired() })
    }

    func join() {
        driver.join()
    }

    /// Checks the repeating timers replaced in the last round, and forgets them.
    private func verifyRetired() {
        let timers = retired.withLock { timers in
            defer { timers.removeAll() }
            return timers
        }
        for timer in timers { timer.verifyRetired() }
    }

    func tearDown() {
        for timer in repeating.withLock({ $0 }) {
            timer.retire()
            timer.verifyRetired()
        }
    }

    /// Adds two dozen one-shot timers with their plans, then waits until each fired as many times as it must.
    private func oneShotRound(_ random: inout SplitMix64) {
        var shots: [(Shot, Plan)] = []
        for _ in 0..<24 {
            let plan = Plan.allCases.randomElement(using: &random)!
            let hub = hubs.randomElement(using: &random)!
            let mode = [Loop.Mode.default, .common, Hub.nestedMode].randomElement(using: &random)!
            let delay = Duration.microseconds(Int.random(in: 0...12_000, using: &random))
            let tolerance = [Duration.zero, .microseconds(500), .milliseconds(2), .milliseconds(5)]
                .randomElement(using: &random)!
            let shot = Shot(expectedFires: plan == .rearmedByHandler ? 2 : 1)
            let tally: Tally
            switch plan {
            case .plain, .rearmedFromDriver: tally = oneShots
            case .rearmedByHandler: tally = rearmedByHandler
            case .invalidatedFromDriver, .invalidatedOnHub: tally = firedBeforeInvalidation
            }
            let timer: LoopTimer
            do {
                timer = try LoopTimer(after: delay, tolerance: tolerance) { [rearmedAfterFiring] timer in
                    shot.fired(timer, rearm: plan == .rearmedByHandler, tally: tally, refired: rearmedAfterFiring)
                }
                try hub.loop.add(timer, to: mode)
            } catch {
                Violations.shared.record("timers: making or adding a one-shot threw \(error)")
                continue
            }
            switch plan {
            case .plain, .rearmedByHandler:
                tally.expect(shot.expectedFires)
            case .rearmedFromDriver:
                tally.expect()
                let target = Loop.Instant.now + .microseconds(Int.random(in: 0...12_000, using: &random))
                shot.rearmed(to: target)
                timer.setNextFireTime(target)
            case .invalidatedFromDriver:
                timer.invalidate()
                shot.invalidated(at: shot.fireCount)
                invalidatedFromDriver.deliver()
            case .invalidatedOnHub:
                do {
                    let firesBefore = try hub.thread.performAndWait { () -> Int in
                        timer.invalidate()
                        return shot.fireCount
                    }
                    shot.invalidated(at: firesBefore)
                    invalidatedOnHub.deliver()
                } catch {
                    Violations.shared.record("timers: performAndWait on \(hub.name) threw \(error)")
                }
            }
            shots.append((shot, plan))
        }
        let deadline = Waiting.deadline(in: Limits.delivery)
        let mustFire = shots.filter { $0.1 != .invalidatedFromDriver && $0.1 != .invalidatedOnHub }
        if !Waiting.until(deadline, { mustFire.allSatisfy { $0.0.fireCount >= $0.0.expectedFires } }) {
            for (shot, plan) in mustFire where shot.fireCount < shot.expectedFires {
                Violations.shared.record(
                    "timers: a \(plan) one-shot fired \(shot.fireCount) of \(shot.expectedFires) times in \(Limits.deliverySeconds) s"
                )
            }
        }
        for (shot, plan) in shots {
            switch plan {
            case .invalidatedFromDriver:
                if shot.fireCount > shot.firesAtInvalidation + 1 {
                    Violations.shared.record(
                        "timers: fired \(shot.fireCount - shot.firesAtInvalidation) times after invalidate() returned on another thread"
                    )
                }
            case .invalidatedOnHub:
                if shot.fireCount != shot.firesAtInvalidation {
                    Violations.shared.record("timers: fired after invalidate() returned on the hub's thread")
                }
            default:
                break
            }
        }
    }

    /// Invalidates repeating timer `index` (modulo their count) from this thread and puts a new one in its place;
    /// answers the old one, to check later that it stopped firing.
    private func replaceRepeating(at index: Int, _ random: inout SplitMix64) -> Repeating {
        let old = repeating.withLock { $0[index % $0.count] }
        old.retire()
        do {
            let fresh = try Repeating(hub: old.hub, mode: old.mode, random: &random, fires: repeatingFires)
            repeating.withLock { $0[index % $0.count] = fresh }
            repeatingReplaced.deliver()
        } catch {
            Violations.shared.record("timers: making a repeating timer threw \(error)")
        }
        return old
    }

    /// One one-shot timer's record.
    private final class Shot: Sendable {
        let expectedFires: Int
        private let fires = Atomic<Int>(0)
        private let firesAtInvalidationStorage = Atomic<Int>(0)
        /// The time the driver re-armed the timer for, in nanoseconds; 0 if it did not.
        private let rearmedTo = Atomic<Int64>(0)

        init(expectedFires: Int) {
            self.expectedFires = expectedFires
        }

        var fireCount: Int { fires.load(ordering: .acquiring) }
        var firesAtInvalidation: Int { firesAtInvalidationStorage.load(ordering: .relaxed) }

        func invalidated(at fireCount: Int) {
            firesAtInvalidationStorage.store(fireCount, ordering: .relaxed)
        }

        /// The driver is about to re-arm the timer for `time`.
        func rearmed(to time: Loop.Instant) {
            rearmedTo.store(time.nanoseconds, ordering: .relaxed)
        }

        /// The handler: never early, never more often than expected; re-arms itself once when `rearm`. A timer the
        /// driver re-armed after it fired fires once more, for the re-armed time (counted in `refired`).
        func fired(_ timer: LoopTimer, rearm: Bool, tally: Tally, refired: Tally) {
            let now = Loop.Instant.now
            if now < timer.nextFireTime {
                Violations.shared.record("timers: a one-shot fired \(timer.nextFireTime - now) early")
            }
            let count = fires.add(1, ordering: .acquiringAndReleasing).newValue
            let rearmedTo = rearmedTo.load(ordering: .relaxed)
            if count == expectedFires + 1, rearmedTo != 0, timer.nextFireTime.nanoseconds == rearmedTo {
                refired.deliver()
                return
            }
            if count > expectedFires {
                Violations.shared.record("timers: a one-shot fired \(count) times (at most \(expectedFires))")
            }
            if rearm && count == 1 { timer.setNextFireTime(.now + .milliseconds(1)) }
            tally.deliver()
        }
    }

    /// A long-lived repeating timer and what its handler saw.
    private final class Repeating: Sendable {
        let hub: Hub
        let mode: Loop.Mode
        let timer: LoopTimer
        private let record: Record

        init(hub: Hub, mode: Loop.Mode, random: inout SplitMix64, fires tally: Tally) throws {
            self.hub = hub
            self.mode = mode
            let interval = Duration.microseconds(Int.random(in: 2_000...20_000, using: &random))
            let tolerance = Duration.microseconds(Int.random(in: 0...5_000, using: &random))
            let record = Record(interval: interval, tally: tally)
            self.record = record
            timer = try LoopTimer(after: interval, repeating: interval, tolerance: tolerance) { timer in
                record.fired(timer)
            }
            try hub.loop.add(timer, to: mode)
        }

        /// Moves the next fire from the driver's thread.
        func rearm(_ random: inout SplitMix64) {
            let time = Loop.Instant.now + .microseconds(Int.random(in: 0...10_000, using: &random))
            record.rearmed(to: time)
            timer.setNextFireTime(time)
        }

        /// Invalidates the timer from this thread, noting how often it had fired.
        func retire() {
            timer.invalidate()
            record.retired()
        }

        /// At most one fire may follow `invalidate()` returning on another thread.
        func verifyRetired() {
            record.verifyRetired()
        }
    }

    /// What a repeating timer's handler saw.
    private final class Record: Sendable {
        private let intervalNanoseconds: Int64
        private let tally: Tally
        /// The fire time fired last, in nanoseconds; 0 before the first fire.
        private let lastFireTime = Atomic<Int64>(0)
        /// The time the driver re-armed the timer for last; 0 if never.
        private let rearmedTo = Atomic<Int64>(0)
        private let fires = Atomic<Int>(0)
        private let firesAtRetirement = Atomic<Int>(0)

        init(interval: Duration, tally: Tally) {
            intervalNanoseconds =
                interval.components.seconds * 1_000_000_000
                + interval.components.attoseconds / 1_000_000_000
            self.tally = tally
        }

        /// The handler's checks; see ``TimerTraffic``.
        func fired(_ timer: LoopTimer) {
            let now = Loop.Instant.now.nanoseconds
            let due = timer.nextFireTime.nanoseconds
            if now < due {
                Violations.shared.record("timers: a repeating timer fired \(due - now) ns early")
            }
            let last = lastFireTime.exchange(due, ordering: .relaxed)
            // A fire for the re-armed time may come after a later grid time fired before the re-arm reached the loop.
            if last != 0 && due != rearmedTo.load(ordering: .relaxed) {
                if due <= last {
                    Violations.shared.record("timers: a repeating timer fired for \(due) after \(last)")
                } else if (due - last) % intervalNanoseconds != 0 {
                    Violations.shared.record(
                        "timers: a repeating timer left its grid (\(due - last) ns after the last fire)")
                }
            }
            fires.add(1, ordering: .relaxed)
            tally.deliver()
        }

        /// The driver is about to re-arm the timer for `time`.
        func rearmed(to time: Loop.Instant) {
            rearmedTo.store(time.nanoseconds, ordering: .relaxed)
        }

        /// The driver's `invalidate()` returned.
        func retired() {
            firesAtRetirement.store(fires.load(ordering: .relaxed), ordering: .relaxed)
        }

        /// At most one fire may follow `invalidate()` returning on another thread.
        func verifyRetired() {
            let extra = fires.load(ordering: .relaxed) - firesAtRetirement.load(ordering: .relaxed)
            if extra > 1 {
                Violations.shared.record("timers: a repeating timer fired \(extra) times after invalidate() returned")
            }
        }
    }
}
