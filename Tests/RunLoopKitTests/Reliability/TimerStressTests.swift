import Glibc
import RunLoopKitSystem
import SplitMix64
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// One-shot timers added, re-armed and invalidated from the loop's thread and from other threads while timers
/// fire: none fires after `invalidate()` returned on the loop's thread, none fires twice for one arming (a re-arm
/// that finds the timer fired arms it once more), none that stays valid is lost. Repeating timers likewise: none fires early, after `invalidate()` returned on the loop's thread, or
/// twice in one pass; none fires for a grid time it missed, and one left alone keeps to its grid.
@Suite struct TimerStressTests {
    /// Per-timer fire counts and flags; written by the loop thread, read after it is joined.
    final class Ledger: Sendable {
        let fires: Locked<[Int]>
        /// Set on the loop's thread right after `invalidate()` returned there.
        let invalidatedOnLoop: Locked<[Bool]>
        let firedAfterInvalidate = Atomic<Int>(0)
        /// Each timer's armings: its first fire time and every time another thread re-armed it for.
        let armings: Locked<[[Int64]]>
        /// The fire time of each firing (the timer's `nextFireTime` in its handler).
        let fired: Locked<[[Int64]]>
        init(count: Int) {
            fires = Locked(Array(repeating: 0, count: count))
            invalidatedOnLoop = Locked(Array(repeating: false, count: count))
            armings = Locked(Array(repeating: [], count: count))
            fired = Locked(Array(repeating: [], count: count))
        }
        func fireCount(_ index: Int) -> Int { fires.withLock { $0[index] } }
    }

    /// What happens to timer `index`: 0 nothing, 1 re-armed from another thread, 2 invalidated on the loop's
    /// thread, 3 invalidated from another thread; even-numbered batches are added from the loop's thread.
    static func kind(_ index: Int) -> Int { index % 4 }

    /// Adds the timers `makeTimer` makes for `range` to `loop`: from the calling thread, or from a block on the
    /// loop's thread (waiting until it ran).
    static func addTimers(
        _ range: Range<Int>,
        to loop: Loop,
        fromLoopThread: Bool,
        _ makeTimer: @escaping @Sendable (Int) -> LoopTimer
    ) {
        guard fromLoopThread else {
            for index in range { try! loop.add(makeTimer(index)) }
            return
        }
        let added = ItemsSupport.Flag()
        loop.perform {
            for index in range { try! Loop.current.add(makeTimer(index)) }
            added.set()
        }
        _ = waitUntil { added.isSet }
    }

    @Test func timersAddedRearmedAndInvalidatedFromEverywhereWhileFiring() {
        let count = Reliability.size(40_000, soak: 400_000)
        let ledger = Ledger(count: count)
        let timers = Locked<[LoopTimer?]>(Array(repeating: nil, count: count))
        let start = Loop.Instant.now
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(60))
        let loop = running.loop

        @Sendable func makeTimer(_ index: Int) -> LoopTimer {
            let delay = Duration.microseconds(Int64(index % 50) * 40)
            let timer = try! LoopTimer(after: delay) { timer in
                if ledger.invalidatedOnLoop.withLock({ $0[index] }) {
                    ledger.firedAfterInvalidate.add(1, ordering: .relaxed)
                }
                ledger.fired.withLock { $0[index].append(timer.nextFireTime.nanoseconds) }
                ledger.fires.withLock { $0[index] += 1 }
            }
            ledger.armings.withLock { $0[index] = [timer.nextFireTime.nanoseconds] }
            timers.withLock { $0[index] = timer }
            return timer
        }

        let batch = 100
        let workers = (0..<2).map { worker in
            TestThread {
                var random = SplitMix64(seed: UInt64(worker) + 7)
                for first in stride(from: worker * batch, to: count, by: 2 * batch) {
                    let range = first..<min(first + batch, count)
                    Self.addTimers(range, to: loop, fromLoopThread: (first / batch) % 4 >= 2, makeTimer)
                    for index in range {
                        let timer = timers.withLock { $0[index] }!
                        switch Self.kind(index) {
                        case 1:
                            for _ in 0..<random.below(3) + 1 {
                                let target = Loop.Instant.now + .microseconds(Int64(random.below(2_000)))
                                ledger.armings.withLock { $0[index].append(target.nanoseconds) }
                                timer.setNextFireTime(target)
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
        // Settled: every timer left valid fired and is spent (a re-armed one no longer waits to fire again).
        let settled = waitUntil(timeout: .seconds(30)) {
            (0..<count).allSatisfy { index in
                Self.kind(index) >= 2
                    || (ledger.fireCount(index) >= 1 && !(timers.withLock { $0[index] }!.isValid))
            }
        }
        running.finish()
        let elapsed = Loop.Instant.now - start

        #expect(settled)
        #expect(ledger.firedAfterInvalidate.load(ordering: .relaxed) == 0)
        let counts = ledger.fires.withLock { $0 }
        let lost = (0..<count).filter { Self.kind($0) < 2 && counts[$0] == 0 }
        let twice = (0..<count).filter { Self.kind($0) != 1 && counts[$0] > 1 }
        #expect(lost.isEmpty, "timers that stayed valid never fired: \(lost.prefix(10))")
        #expect(twice.isEmpty, "one-shot timers never re-armed fired more than once: \(twice.prefix(10))")
        // A re-armed one fires once per arming at most: only for times it was armed for, none twice. (A re-arm made
        // before it fired moves that firing; one made after it fired arms it again.)
        let armings = ledger.armings.withLock { $0 }
        let fired = ledger.fired.withLock { $0 }
        let badRearmed = (0..<count).filter { index in
            Self.kind(index) == 1
                && (Set(fired[index]).count != fired[index].count
                    || !fired[index].allSatisfy { armings[index].contains($0) })
        }
        #expect(badRearmed.isEmpty, "re-armed timers fired for a time twice or not armed: \(badRearmed.prefix(10))")
        let refired = (0..<count).filter { Self.kind($0) == 1 && counts[$0] > 1 }.count
        let invalidatedFired = (0..<count).filter { Self.kind($0) >= 2 && counts[$0] == 1 }.count
        Reliability.report(
            "timers: \(count) one-shot timers, \(invalidatedFired) of \(count / 2) invalidated ones fired first, "
                + "\(refired) of \(count / 4) re-armed from another thread after they fired, \(elapsed)")
    }

    // MARK: Repeating timers

    /// What one repeating timer did; every field is read and written under the ledger's lock.
    struct Track: Sendable {
        var interval: Int64 = 0
        var fires = 0
        var lastScheduled: Int64 = 0
        var lastActual: Int64 = 0
        var lastPass = -1
        /// The fire times other threads re-armed the timer for (recorded before `setNextFireTime` is called). A
        /// fire for none of them must be on the grid of the fire before it.
        var targets: Set<Int64> = []
        /// The time the handler re-armed the timer for: the next fire must be for exactly that time.
        var expectedNext: Int64?
        var invalidatedOnLoop = false
        var invalidatedElsewhere = false
        var firesAfterInvalidatedElsewhere = 0
    }

    /// What happens to repeating timer `index`: 0 nothing, 1 re-armed from another thread while it fires,
    /// 2 invalidated on the loop's thread (by its own handler or by a block), 3 invalidated from another thread
    /// while it fires, 4 re-armed from inside its own handler at every fire (sometimes to a time already past).
    static func repeatingKind(_ index: Int) -> Int { index % 5 }

    @Test func repeatingTimersRearmedAndInvalidatedFromEverywhereWhileFiring() {
        let count = Reliability.size(2_000, soak: 40_000)
        let batch = 50
        let tracks = Locked<[Track]>(Array(repeating: Track(), count: count))
        let timers = Locked<[LoopTimer?]>(Array(repeating: nil, count: count))
        let failures = Recorder<String>()
        let passes = Counter()
        let start = Loop.Instant.now
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(120)) { loop in
            try! loop.add(LoopObserver(activities: .beforeTimers) { _, _ in passes.increment() })
        }
        let loop = running.loop

        @Sendable func fires(_ index: Int) -> Int { tracks.withLock { $0[index].fires } }

        @Sendable func makeTimer(_ index: Int) -> LoopTimer {
            let kind = Self.repeatingKind(index)
            let interval = Int64((index / 5) % 5 + 2) * 1_000_000
            tracks.withLock { $0[index].interval = interval }
            let timer = try! LoopTimer(
                after: .microseconds(Int64(index % 7) * 500), repeating: .nanoseconds(interval)
            ) { timer in
                let now = Loop.Instant.now.nanoseconds
                let scheduled = timer.nextFireTime.nanoseconds
                let pass = passes.current
                let fired = tracks.withLock { all -> Int in
                    var track = all[index]
                    defer { all[index] = track }
                    if track.invalidatedOnLoop {
                        failures.append("timer \(index) fired after invalidate() returned on the loop's thread")
                    }
                    if track.invalidatedElsewhere { track.firesAfterInvalidatedElsewhere += 1 }
                    if now < scheduled { failures.append("timer \(index) fired \(scheduled - now) ns early") }
                    if track.fires > 0 && pass == track.lastPass {
                        failures.append("timer \(index) fired twice in one pass")
                    }
                    if track.fires > 0 && !track.targets.contains(scheduled) {
                        if let expected = track.expectedNext {
                            if scheduled != expected {
                                failures.append(
                                    "timer \(index) re-armed for \(expected) in its handler, fired for \(scheduled)")
                            }
                        } else {
                            let gap = scheduled - track.lastScheduled
                            if gap <= 0 || gap % track.interval != 0 {
                                failures.append("timer \(index) left its grid: \(gap) ns after its last fire time")
                            }
                            // The grid resumes at the first fire time after the last handler: none piled up.
                            if scheduled <= track.lastActual {
                                failures.append("timer \(index) fired for a fire time missed before its last fire")
                            }
                        }
                    }
                    track.fires += 1
                    track.lastScheduled = scheduled
                    track.lastActual = now
                    track.lastPass = pass
                    track.expectedNext = nil
                    return track.fires
                }
                switch kind {
                case 2 where index % 2 == 0 && fired == 2:
                    timer.invalidate()
                    tracks.withLock { $0[index].invalidatedOnLoop = true }
                case 4:
                    let target = now + Int64((index &* 7_919 &+ fired &* 104_729) % 4_000 - 1_000) * 1_000
                    tracks.withLock { $0[index].expectedNext = target }
                    timer.setNextFireTime(Loop.Instant(nanoseconds: target))
                default:
                    break
                }
            }
            timers.withLock { $0[index] = timer }
            return timer
        }

        @Sendable func invalidateElsewhere(_ index: Int) {
            guard let timer = timers.withLock({ $0[index] }), timer.isValid else { return }
            timer.invalidate()
            tracks.withLock { $0[index].invalidatedElsewhere = true }
        }

        let workers = (0..<2).map { worker in
            TestThread {
                var random = SplitMix64(seed: UInt64(worker) + 11)
                for first in stride(from: worker * batch, to: count, by: 2 * batch) {
                    let range = first..<min(first + batch, count)
                    Self.addTimers(range, to: loop, fromLoopThread: (first / batch) % 4 >= 2, makeTimer)
                    // Every timer is firing before the other threads touch it.
                    if !waitUntil(timeout: .seconds(20), { range.allSatisfy { fires($0) >= 1 } }) {
                        failures.append("timers \(range) did not all fire once")
                    }
                    for round in 0..<3 {
                        for index in range {
                            switch Self.repeatingKind(index) {
                            case 1:
                                let timer = timers.withLock { $0[index] }!
                                let offset = Int64(random.below(4_000)) - 1_000
                                let target = Loop.Instant.now + .microseconds(offset)
                                tracks.withLock { _ = $0[index].targets.insert(target.nanoseconds) }
                                timer.setNextFireTime(target)
                            case 2 where index % 2 == 1 && round == 0:
                                let timer = timers.withLock { $0[index] }!
                                loop.perform {
                                    timer.invalidate()
                                    tracks.withLock { $0[index].invalidatedOnLoop = true }
                                }
                            case 3 where round == 1:
                                invalidateElsewhere(index)
                            default:
                                break
                            }
                        }
                        if random.chance(50) { usleep(UInt32(random.below(300))) }
                    }
                    // The timers left valid keep firing; the ones invalidating themselves did.
                    let settled = waitUntil(timeout: .seconds(20)) {
                        range.allSatisfy { index in
                            switch Self.repeatingKind(index) {
                            case 0, 1, 4: fires(index) >= 4
                            case 2: index % 2 == 1 || fires(index) >= 2
                            default: true
                            }
                        }
                    }
                    if !settled { failures.append("timers \(range) that stayed valid stopped firing") }
                    for index in range { invalidateElsewhere(index) }
                }
            }
        }
        for worker in workers { worker.join() }
        // Every invalidation reached the loop before this block; no timer may fire after it.
        let barrier = ItemsSupport.Flag()
        loop.perform { barrier.set() }
        #expect(waitUntil { barrier.isSet })
        let firesAtBarrier = tracks.withLock { $0.reduce(0) { $0 + $1.fires } }
        let check = ItemsSupport.Flag()
        try! loop.add(LoopTimer(after: .milliseconds(30)) { _ in check.set() })
        #expect(waitUntil { check.isSet })
        running.finish()
        let elapsed = Loop.Instant.now - start

        let all = tracks.withLock { $0 }
        let total = all.reduce(0) { $0 + $1.fires }
        #expect(failures.all.isEmpty, "\(failures.count) failures: \(failures.all.prefix(5))")
        #expect(total == firesAtBarrier, "\(total - firesAtBarrier) fires after every timer was invalidated")
        let late = all.indices.filter { all[$0].firesAfterInvalidatedElsewhere > 1 }
        #expect(late.isEmpty, "fired more than once after invalidate() returned on another thread: \(late.prefix(10))")
        #expect(timers.withLock { $0.allSatisfy { $0?.isValid == false } })
        let onLoop = all.filter(\.invalidatedOnLoop).count
        let rearms = all.reduce(0) { $0 + $1.targets.count }
        #expect(onLoop == count / 5)
        #expect(total >= 3 * count)
        Reliability.report(
            "repeating timers: \(count) timers, \(total) fires, \(rearms) re-arms from other threads, "
                + "\(onLoop) invalidated on the loop's thread, \(elapsed)")
    }
}
