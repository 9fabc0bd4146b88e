import Glibc
import RunLoopKitSystem
import SplitMix64
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Sources, timers and observers that add, remove, invalidate and signal themselves and each other from inside
/// their callouts, across three modes (two common) and nested runs: no crash, and every source's schedule and
/// cancel counts agree with the modes it is in at the end. A sibling test does the same with descriptor sources
/// (eventfds and pipes made readable, some watched by several sources at once, some closed without invalidating and
/// their numbers reused) and custom sources whose schedule and cancel handlers mutate too, checking pairing and
/// "nothing after invalidate".
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
                    perform: { _ in mutate() })
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
                let observer = LoopObserver(activities: .all) { _, _ in
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

    // MARK: Descriptor sources and schedule / cancel handlers

    /// One descriptor source of a ``Watched`` descriptor, and what its handler saw. Loop thread only.
    final class WatchedSource: @unchecked Sendable {
        var source: FileDescriptorSource?
        var calls = 0
        /// Last calls telling the handler its descriptor is gone (``FileDescriptorSource/Events/invalid``).
        var invalidCalls = 0
        /// Set right after `invalidate()` returned (on the loop's thread).
        var invalidated = false
    }

    /// An eventfd or a pipe, watched by one descriptor source or several at once (sharing its registration), and
    /// what their handlers saw. Loop thread only.
    final class Watched: @unchecked Sendable {
        let readEnd: CInt
        let writeEnd: CInt
        /// The first source, then its companions.
        var watchers: [WatchedSource] = []
        var source: FileDescriptorSource? { watchers.first?.source }
        /// Its descriptors were closed.
        var closed = false
        /// Closed without invalidating, and a newer source now watches a descriptor with the same number.
        var superseded = false

        init(eventFD: Bool) {
            if eventFD {
                readEnd = try! EventFD.create()
                writeEnd = readEnd
            } else {
                let ends = Pipe()  // Non-blocking, close-on-exec; closed by `close()` below.
                readEnd = ends.readEnd
                writeEnd = ends.writeEnd
            }
        }

        func makeReadable() {
            guard !closed else { return }
            var one: UInt64 = 1
            _ = write(writeEnd, &one, readEnd == writeEnd ? 8 : 1)
        }

        func drain() {
            guard !closed else { return }
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(readEnd, &buffer, 64) > 0 {}
        }

        func close() {
            guard !closed else { return }
            closed = true
            Glibc.close(readEnd)
            if writeEnd != readEnd { Glibc.close(writeEnd) }
        }
    }

    /// A custom source with schedule and cancel handlers, and the modes it was scheduled in and not yet
    /// cancelled from. Loop thread only.
    final class Tracked: @unchecked Sendable {
        var source: LoopSource?
        var scheduled: Set<Loop.Mode> = []
        /// Set while its `invalidate()` runs (a cancel handler may call it again, which returns at once).
        var invalidating = false
        var invalidated = false
        var schedules = 0
        var cancels = 0
        var performs = 0
    }

    /// Everything the mutating callouts touch; loop thread only.
    final class SourceWorld: @unchecked Sendable {
        var random = SplitMix64(seed: 7)
        var watched: [Watched] = []
        /// Recent descriptor sources whose descriptors were closed without invalidating the source.
        var orphans: [Watched] = []
        var reusedNumbers = 0
        /// Companion sources added to a descriptor another source already watched.
        var companions = 0
        var tracked: [Tracked] = []
        var timers: [LoopTimer] = []
        var callouts = 0
        var descriptorCalls = 0
        var performs = 0
        var schedules = 0
        var cancels = 0
        var depth = 0
        var handlerDepth = 0
        /// Set when the test's body is done: the loop's teardown at thread exit cancels the sources still valid, and
        /// their cancel handlers must not add items to a loop that is going away (that add throws loopTerminated).
        var tearingDown = false
        let modes: [Loop.Mode] = [.default, "fd-second", "fd-private", .common]
        var concreteModes: ArraySlice<Loop.Mode> { modes.dropLast() }
    }

    @Test func descriptorAndCustomSourcesKeepTheirInvariantsWhileCalloutsMutate() {
        let limit = Reliability.size(10_000, soak: 200_000)
        let world = SourceWorld()
        let failures = Recorder<String>()
        let start = Loop.Instant.now
        ItemsSupport.onLoopThread { loop in
            loop.addCommonMode("fd-second")

            @Sendable func pick<T>(_ items: [T]) -> T? {
                items.isEmpty ? nil : items[world.random.below(items.count)]
            }

            @Sendable func mutate() {
                world.callouts += 1
                let mode = world.modes[world.random.below(world.modes.count)]
                switch world.random.below(100) {
                case 0..<12:
                    pick(world.watched)?.makeReadable()
                case 12..<20:
                    pick(world.tracked)?.source?.signal()
                case 20..<30:
                    if let item = pick(world.watched), !item.closed, let source = pick(item.watchers)?.source {
                        try? loop.add(source, to: mode)
                    }
                case 30..<38:
                    if let source = pick(world.watched).flatMap({ pick($0.watchers) })?.source {
                        loop.remove(source, from: mode)
                    }
                case 38..<41:
                    if let watcher = pick(world.watched).flatMap({ pick($0.watchers) }) { invalidate(watcher) }
                case 41..<52:
                    if let source = pick(world.tracked)?.source { try? loop.add(source, to: mode) }
                case 52..<60:
                    if let source = pick(world.tracked)?.source { loop.remove(source, from: mode) }
                case 60..<63:
                    if let item = pick(world.tracked) { invalidate(item) }
                case 63..<68:
                    makeWatched(in: mode)
                case 68..<74:
                    loop.perform(in: mode) { mutate() }
                case 74..<78 where world.depth < 3:
                    world.depth += 1
                    loop.run(in: world.modes[world.random.below(3)], for: .zero)
                    world.depth -= 1
                case 78..<84:
                    if world.timers.count >= 20 { world.timers.removeFirst().invalidate() }
                    let timer = try! LoopTimer(after: .microseconds(Int64(world.random.below(300)))) { _ in mutate() }
                    world.timers.append(timer)
                    try? loop.add(timer, to: mode)
                case 84..<90:
                    makeTracked(in: mode)
                case 90..<95:
                    if let item = pick(world.watched), !item.closed, item.watchers.count < 4 {
                        addWatcher(to: item, in: mode)
                    }
                default:
                    break
                }
            }

            /// Mutates from inside a schedule or cancel handler now and then (not too deep: every mutation can
            /// call further handlers).
            @Sendable func maybeMutateFromHandler() {
                guard !world.tearingDown, world.handlerDepth < 3, world.random.chance(15) else { return }
                world.handlerDepth += 1
                mutate()
                world.handlerDepth -= 1
            }

            @Sendable func invalidate(_ watcher: WatchedSource) {
                watcher.source?.invalidate()
                watcher.invalidated = true
            }

            @Sendable func invalidate(_ item: Watched) {
                for watcher in item.watchers { invalidate(watcher) }
            }

            @Sendable func invalidate(_ item: Tracked) {
                guard !item.invalidating else { return }  // Called again from one of its own cancel handlers.
                item.invalidating = true
                item.source?.invalidate()
                item.invalidated = true
                if !item.scheduled.isEmpty {
                    failures.append("invalidate() returned with \(item.scheduled) scheduled and not cancelled")
                }
            }

            @Sendable func makeWatched(in mode: Loop.Mode) {
                if world.watched.count >= 24 {
                    let oldest = world.watched.removeFirst()
                    // Now and then closed without invalidating (misuse the loop must survive).
                    if world.random.chance(80) {
                        invalidate(oldest)
                    } else {
                        world.orphans.append(oldest)
                        if world.orphans.count > 16 { world.orphans.removeFirst() }
                    }
                    oldest.close()
                }
                let item = Watched(eventFD: world.random.chance(50))
                let reused = world.orphans.filter { !$0.superseded && $0.readEnd == item.readEnd }
                world.watched.append(item)
                addWatcher(to: item, in: mode)
                // The orphan on the same number is replaced: its sources are invalid, and never called again.
                for old in reused {
                    old.superseded = true
                    world.reusedNumbers += 1
                    if old.watchers.contains(where: { $0.source?.isValid == true }) {
                        failures.append("a source whose descriptor number was reused is still valid")
                    }
                }
                if world.random.chance(50) { item.makeReadable() }
            }

            /// Adds a source on `item`'s descriptor: its first, or a companion sharing the registration.
            @Sendable func addWatcher(to item: Watched, in mode: Loop.Mode) {
                let watcher = WatchedSource()
                let source = try! FileDescriptorSource(descriptor: item.readEnd, order: world.random.below(3)) {
                    _, events in
                    world.descriptorCalls += 1
                    if events == .invalid {
                        // The loop found the number taken by a newer file: one last call, nothing after it.
                        watcher.invalidCalls += 1
                        if watcher.invalidCalls > 1 { failures.append("descriptor handler told invalid twice") }
                        if watcher.invalidated { failures.append("handler told invalid after invalidate() returned") }
                        if watcher.source?.failure == nil { failures.append("handler told invalid with no failure") }
                        return
                    }
                    if watcher.invalidCalls > 0 {
                        failures.append("descriptor handler called after it was told invalid")
                    }
                    watcher.calls += 1
                    if watcher.invalidated { failures.append("descriptor handler called after invalidate() returned") }
                    if item.superseded {
                        failures.append("descriptor handler called after its number went to a newer source")
                    }
                    if events != .readable { failures.append("descriptor handler called with \(events)") }
                    if let current = loop.currentMode, let source = watcher.source, !loop.contains(source, in: current)
                    {
                        failures.append("descriptor handler called in \(current), a mode the source is not in")
                    }
                    if world.random.chance(60) { item.drain() }  // Else it stays ready: called again next pass.
                    if world.random.chance(70) { mutate() }
                }
                watcher.source = source
                if !item.watchers.isEmpty { world.companions += 1 }
                item.watchers.append(watcher)
                do throws(LoopError) {
                    try loop.add(source, to: mode)
                } catch {
                    failures.append("adding a descriptor source (watcher \(item.watchers.count)) threw \(error)")
                }
            }

            @Sendable func makeTracked(in mode: Loop.Mode) {
                if world.tracked.count >= 24 { invalidate(world.tracked.removeFirst()) }
                let item = Tracked()
                item.source = LoopSource(
                    order: world.random.below(3),
                    schedule: { _, mode in
                        world.schedules += 1
                        item.schedules += 1
                        if item.invalidated { failures.append("schedule after invalidate() returned") }
                        if mode == .common { failures.append("schedule handler called with .common") }
                        if !item.scheduled.insert(mode).inserted {
                            failures.append("scheduled twice in \(mode) without a cancel in between")
                        }
                        maybeMutateFromHandler()
                    },
                    cancel: { _, mode in
                        world.cancels += 1
                        item.cancels += 1
                        if item.scheduled.remove(mode) == nil {
                            failures.append("cancelled from \(mode) without a schedule there")
                        }
                        maybeMutateFromHandler()
                    },
                    perform: { _ in
                        world.performs += 1
                        item.performs += 1
                        if item.invalidated { failures.append("perform after invalidate() returned") }
                        if let current = loop.currentMode, !item.scheduled.contains(current) {
                            // E.g. removed from the running mode by an earlier callout of the same pass.
                            let scheduled = item.scheduled.map(\.name).sorted()
                            failures.append("performed in \(current), scheduled in \(scheduled)")
                        }
                        mutate()
                    })
                world.tracked.append(item)
                try? loop.add(item.source!, to: mode)
                if world.random.chance(50) { item.source?.signal() }
            }

            /// The modes a custom source was scheduled in and not cancelled from are exactly the modes it is in.
            @Sendable func checkMembership(_ item: Tracked) {
                guard let source = item.source else { return }
                let modes = Set(world.concreteModes.filter { loop.contains(source, in: $0) })
                if modes != item.scheduled {
                    failures.append(
                        "source in \(modes.count) modes but scheduled in \(item.scheduled.count) (valid \(source.isValid))"
                    )
                }
            }

            for index in 0..<6 {
                makeWatched(in: world.modes[index % 4])
                makeTracked(in: world.modes[index % 4])
            }
            try! loop.add(ItemsSupport.keepAlive(), to: .common)
            try! loop.add(ItemsSupport.keepAlive(), to: "fd-private")
            var round = 0
            while world.callouts < limit && Loop.Instant.now < start + .seconds(60) {
                // Every descriptor ready and every custom source signalled: each pass has callouts to make.
                for item in world.watched { item.makeReadable() }
                for item in world.tracked { item.source?.signal() }
                if !world.tracked.contains(where: { !$0.invalidated }) { makeTracked(in: .common) }
                loop.run(in: world.modes[round % 3], for: .milliseconds(1))
                if round % 64 == 0 { world.tracked.forEach(checkMembership) }
                round += 1
            }
            world.tracked.forEach(checkMembership)
            // Invalidated descriptor sources whose descriptors stay ready, and invalidated custom sources that
            // are signalled, are never called again.
            for item in world.tracked {
                item.source?.signal()
                invalidate(item)
                item.source?.signal()
                checkMembership(item)
            }
            for item in world.watched {
                invalidate(item)
                item.makeReadable()
            }
            for mode in world.concreteModes { loop.run(in: mode, for: .milliseconds(5)) }
            for item in world.watched { item.close() }
            for timer in world.timers { timer.invalidate() }
            if world.schedules - world.cancels != world.tracked.reduce(0, { $0 + $1.scheduled.count }) {
                failures.append("\(world.schedules) schedules, \(world.cancels) cancels")
            }
            world.tearingDown = true
        }
        let kinds = Dictionary(grouping: failures.all) { $0.split(separator: " ").prefix(3).joined(separator: " ") }
        #expect(failures.all.isEmpty, "\(kinds.mapValues(\.count)); first: \(failures.all.prefix(5))")
        #expect(world.callouts >= min(limit, 1_000))
        #expect(world.descriptorCalls >= min(limit / 20, 500))
        #expect(world.performs >= min(limit / 20, 500))
        #expect(world.cancels >= min(limit / 20, 500))
        #expect(world.reusedNumbers >= 1)
        #expect(world.companions >= min(limit / 200, 20))
        Reliability.report(
            "descriptor and custom source mutation: \(world.callouts) mutating callouts, "
                + "\(world.descriptorCalls) descriptor handler calls, \(world.performs) performs, "
                + "\(world.schedules) schedules, \(world.cancels) cancels, "
                + "\(world.reusedNumbers) reused numbers, \(world.companions) companions, "
                + "\(Loop.Instant.now - start)")
    }
}
