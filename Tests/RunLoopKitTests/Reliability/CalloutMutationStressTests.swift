import Glibc
import RunLoopKit
import Synchronization
import Testing

/// Sources, timers and observers that add, remove, invalidate and signal themselves and each other from inside
/// their callouts, across three modes (two common) and nested runs: no crash, and every source's schedule and
/// cancel counts agree with the modes it is in at the end.
@Suite struct CalloutMutationStressTests {
    /// The items and counters; touched only on the loop's thread.
    final class World: @unchecked Sendable {
        var random = SplitMix64(seed: 42)
        var sources: [LoopSource] = []
        var timers: [LoopTimer] = []
        /// Per item, in step with `sources` and `timers`: schedules minus cancels, or fires.
        var sourceJoins: [Counts] = []
        var timerFires: [Counts] = []
        var observers: [LoopObserver] = []
        var callouts = 0
        var depth = 0
        let modes: [Loop.Mode] = [.default, "mutate-second", "mutate-private", .common]
    }

    /// A counter owned by one item's handlers (loop thread only).
    final class Counts: @unchecked Sendable {
        var value = 0
    }

    @Test func calloutsChangeTheirOwnAndEachOthersMembership() {
        let limit = Reliability.size(10_000, soak: 200_000)
        let world = World()
        let failures = Recorder<String>()
        let start = Loop.Instant.now
        ItemsSupport.onLoopThread { loop in
            loop.addCommonMode("mutate-second")

            @Sendable func mutate() {
                world.callouts += 1
                let random = world.random.below(100)
                let mode = world.modes[world.random.below(world.modes.count)]
                switch random {
                case 0..<20 where !world.sources.isEmpty:
                    world.sources[world.random.below(world.sources.count)].signal()
                case 20..<35 where !world.sources.isEmpty:
                    try? loop.add(world.sources[world.random.below(world.sources.count)], to: mode)
                case 35..<45 where !world.sources.isEmpty:
                    loop.remove(world.sources[world.random.below(world.sources.count)], from: mode)
                case 45..<48 where !world.sources.isEmpty:
                    world.sources[world.random.below(world.sources.count)].invalidate()
                case 48..<60:
                    if world.timers.count >= 40 {
                        world.timers.removeFirst().invalidate()
                        checkFires(world.timerFires.removeFirst())
                    }
                    let fires = Counts()
                    let timer = try! LoopTimer(after: .microseconds(Int64(world.random.below(500)))) { _ in
                        fires.value += 1
                        mutate()
                    }
                    world.timers.append(timer)
                    world.timerFires.append(fires)
                    try? loop.add(timer, to: mode)
                case 60..<68 where !world.timers.isEmpty:
                    let timer = world.timers[world.random.below(world.timers.count)]
                    if world.random.chance(50) { timer.invalidate() } else { loop.remove(timer, from: mode) }
                case 68..<74 where !world.observers.isEmpty:
                    let observer = world.observers[world.random.below(world.observers.count)]
                    if world.random.chance(50) {
                        try? loop.add(observer, to: mode)
                    } else {
                        loop.remove(observer, from: mode)
                    }
                case 74..<80:
                    loop.perform(in: mode) { mutate() }
                case 80..<84 where world.depth < 3:
                    world.depth += 1
                    loop.run(in: world.modes[world.random.below(3)], for: .zero)
                    world.depth -= 1
                case 84..<90:
                    makeSource(in: mode)
                default:
                    break
                }
            }

            @Sendable func makeSource(in mode: Loop.Mode) {
                if world.sources.count >= 40 {
                    let oldest = world.sources.removeFirst()
                    let joins = world.sourceJoins.removeFirst()
                    oldest.invalidate()
                    check(oldest, joins)
                }
                let joins = Counts()
                let source = LoopSource(
                    schedule: { _, _ in joins.value += 1 },
                    cancel: { _, _ in joins.value -= 1 },
                    perform: { mutate() })
                world.sources.append(source)
                world.sourceJoins.append(joins)
                try? loop.add(source, to: mode)
            }

            /// Schedules minus cancels must equal the number of modes the source is in (none once invalid).
            @Sendable func check(_ source: LoopSource, _ counts: Counts) {
                let modes = world.modes.dropLast().filter { loop.contains(source, in: $0) }.count
                let joins = counts.value
                if joins != modes || (!source.isValid && modes != 0) {
                    failures.append(
                        "source: \(joins) schedules minus cancels, in \(modes) modes, valid \(source.isValid)")
                }
            }

            @Sendable func checkFires(_ fires: Counts) {
                if fires.value > 1 { failures.append("a one-shot timer fired \(fires.value) times") }
            }

            for index in 0..<6 {
                let observer = LoopObserver(activities: .all) { _ in
                    if world.random.chance(10) { mutate() }
                }
                world.observers.append(observer)
                try? loop.add(observer, to: world.modes[index % 4])
                makeSource(in: world.modes[index % 4])
            }
            try! loop.add(ItemsSupport.keepAlive(), to: .common)
            try! loop.add(ItemsSupport.keepAlive(), to: "mutate-private")
            var round = 0
            while world.callouts < limit && Loop.Instant.now < start + .seconds(60) {
                if world.sources.allSatisfy({ !$0.isSignalled }) {
                    world.sources.last { $0.isValid }?.signal() ?? makeSource(in: .common)
                }
                loop.run(in: world.modes[round % 3], for: .milliseconds(1))
                round += 1
            }
            world.timerFires.forEach(checkFires)
            // A valid timer in no mode anymore, or an invalid one, is in no mode; the rest are where added.
            for timer in world.timers where !timer.isValid {
                for mode in world.modes where loop.contains(timer, in: mode) {
                    failures.append("an invalidated timer is still in \(mode)")
                }
            }
            for (source, joins) in zip(world.sources, world.sourceJoins) {
                check(source, joins)
                source.invalidate()
                check(source, joins)
            }
            for item in world.timers { item.invalidate() }
            for item in world.observers { item.invalidate() }
        }
        #expect(failures.all.isEmpty, "\(failures.all.prefix(5))")
        #expect(world.callouts >= min(limit, 1_000))
        Reliability.report(
            "callout mutation: \(world.callouts) mutating callouts, \(world.sources.count) sources, "
                + "\(world.timers.count) timers, \(Loop.Instant.now - start)")
    }
}
