import CRunLoopShims
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Several descriptor sources of one loop on one descriptor (GLib's watch and the app's, or a C library's IN and OUT
/// callbacks): one registration in the epoll set, the union of what they watch, and each source told only what it
/// watches, in its own modes, order, and life.
@Suite struct SharedDescriptorTests {
    /// The descriptors in the loop's epoll set, as the kernel lists them (the loop's eventfd and timerfd included).
    static func entries(_ loop: Loop) -> Int {
        epollEntryCount(loop.poller.epoll)
    }

    /// The footprint of a loop running on another thread (``ItemsSupport/startRunningLoop(timeout:setUp:)``),
    /// taken on that thread, in a block.
    static func footprint(of loop: Loop) -> AsyncSupport.Footprint {
        let footprint = Box<AsyncSupport.Footprint>()
        loop.perform { footprint.value = AsyncSupport.footprint(of: loop) }
        _ = waitUntil { footprint.value != nil }
        return footprint.value ?? AsyncSupport.Footprint()
    }

    @Test func aReaderAndAWriterOnOneSocketAreEachToldOnlyTheirOwn() throws {
        let reader = Recorder<FileDescriptorSource.Events>()
        let writer = Recorder<FileDescriptorSource.Events>()
        let entries = Recorder<Int>()
        ItemsSupport.onLoopThread { loop in
            let pair = try! SocketPair()
            let baseline = Self.entries(loop)
            let reading = try! FileDescriptorSource(descriptor: pair.first, events: .readable) { _, events in
                reader.append(events)
                pair.drainFirst()
            }
            let writing = try! FileDescriptorSource(descriptor: pair.first, events: .writable) { source, events in
                writer.append(events)
                source.events = []  // Nothing more to write.
            }
            try! loop.add(reading)
            try! loop.add(writing)
            entries.append(Self.entries(loop) - baseline)
            pair.writeToSecond()
            ItemsSupport.run(loop) { reader.count >= 1 && writer.count >= 1 }
            _ = loop.run(in: .default, for: .milliseconds(20))
            reading.invalidate()
            writing.invalidate()
            entries.append(Self.entries(loop) - baseline)
            pair.close()
        }
        #expect(reader.all == [.readable])
        #expect(writer.all == [.writable])
        #expect(entries.all == [1, 0], "one entry while shared, none once both are invalidated")
    }

    @Test func sourcesOfOneDescriptorAreCalledInOrderInOnePass() {
        let calls = Recorder<String>()
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let sources = [2, 0, 1].map { order in
                try! FileDescriptorSource(descriptor: pipe.readEnd, order: order) { source, _ in
                    calls.append("order\(order)")
                    source.invalidate()
                }
            }
            for source in sources { try! loop.add(source) }
            let observer = LoopObserver(activities: .afterWaiting) { _, _ in calls.append("afterWaiting") }
            try! loop.add(observer)
            pipe.write()
            ItemsSupport.run(loop) { calls.all.filter { $0.hasPrefix("order") }.count >= 3 }
            observer.invalidate()
        }
        let all = calls.all
        guard let first = all.firstIndex(where: { $0.hasPrefix("order") }) else {
            Issue.record("no handler called: \(all)")
            return
        }
        #expect(Array(all[first...].prefix(3)) == ["order0", "order1", "order2"], "\(all)")
    }

    /// Each source is told only in a run of its own modes; a descriptor ready while the running mode has sources
    /// of it watching nothing that holds (or none at all) does not make the loop spin.
    @Test func sourcesInDifferentModesAreEachCalledInTheirOwnMode() {
        let calls = Recorder<String>()
        let passes = Counter()
        let results = Recorder<Loop.RunResult>()
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let inDefault = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                calls.append("default in \(loop.currentMode?.name ?? "-")")
            }
            let inOther = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                calls.append("other in \(loop.currentMode?.name ?? "-")")
            }
            try! loop.add(inDefault)
            try! loop.add(inOther, to: "other")
            try! loop.add(ItemsSupport.keepAlive(), to: "third")
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in passes.increment() }, to: "third")
            pipe.write()  // Never drained: ready throughout.
            results.append(loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true))
            results.append(loop.run(in: "other", for: .seconds(5), returnAfterSourceHandled: true))
            results.append(loop.run(in: "third", for: .milliseconds(200)))
            results.append(loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true))
            inDefault.invalidate()
            inOther.invalidate()
        }
        #expect(results.all == [.handledSource, .handledSource, .timedOut, .handledSource])
        #expect(calls.all == ["default in default", "other in other", "default in default"])
        #expect(passes.current <= 5, "the loop spun \(passes.current) passes while no source of its mode was ready")
    }

    /// `keepsRunAlive` is each source's own: a run whose mode holds, of two sources of one descriptor, only the one
    /// that does not keep runs going finishes.
    @Test func eachSourceKeepsRunsGoingOrNotOnItsOwn() {
        let results = Recorder<Loop.RunResult>()
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let background = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            background.keepsRunAlive = false
            let foreground = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            try! loop.add(background)
            try! loop.add(foreground)
            results.append(loop.run(in: .default, for: .milliseconds(50)))
            foreground.invalidate()
            results.append(loop.run(in: .default, for: .seconds(5)))
            background.invalidate()
        }
        #expect(results.all == [.timedOut, .finished])
    }

    /// A source in the running mode that watches only writable, beside one in another mode that watches readable:
    /// a readable descriptor does not spin the loop, nor reach the writer.
    @Test func readinessOnlyAnotherModesSourceWatchesDoesNotSpinTheLoop() throws {
        let calls = Recorder<String>()
        let passes = Counter()
        ItemsSupport.onLoopThread { loop in
            let pair = try! SocketPair()
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while write(pair.first, &chunk, chunk.count) > 0 {}  // Full: not writable.
            let writer = try! FileDescriptorSource(descriptor: pair.first, events: .writable) { _, events in
                calls.append("writer \(events)")
            }
            let reader = try! FileDescriptorSource(descriptor: pair.first) { _, events in
                calls.append("reader \(events)")
                pair.drainFirst()
            }
            try! loop.add(writer)
            try! loop.add(reader, to: "other")
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in passes.increment() })
            pair.writeToSecond()  // Readable, which only the source in "other" watches.
            _ = loop.run(in: .default, for: .milliseconds(200))
            calls.append("passes \(passes.current <= 5)")
            _ = loop.run(in: "other", for: .seconds(5), returnAfterSourceHandled: true)
            writer.invalidate()
            reader.invalidate()
            pair.close()
        }
        #expect(calls.all == ["passes true", "reader readable"])
    }

    @Test func eitherCanInvalidateItselfInItsHandlerWhileTheOtherGoesOn() {
        for invalidated in ["first", "second"] {
            let calls = Recorder<String>()
            let survivorCalls = Counter()
            let pipe = Pipe()
            defer { pipe.close() }
            ItemsSupport.onLoopThread { loop in
                let baseline = Self.entries(loop)
                let sources = ["first", "second"].enumerated().map { order, name in
                    try! FileDescriptorSource(descriptor: pipe.readEnd, order: order) { source, _ in
                        calls.append(name)
                        pipe.drain()
                        if name == invalidated { source.invalidate() } else { survivorCalls.increment() }
                    }
                }
                for source in sources { try! loop.add(source) }
                for round in 1...3 {
                    pipe.write()
                    ItemsSupport.run(loop) { survivorCalls.current == round }
                    _ = loop.run(in: .default, for: .milliseconds(10))  // Nothing more comes.
                }
                calls.append("entries \(Self.entries(loop) - baseline)")
                for source in sources { source.invalidate() }
                calls.append("entries \(Self.entries(loop) - baseline)")
            }
            let expected =
                invalidated == "first"
                ? ["first", "second", "second", "second", "entries 1", "entries 0"]
                : ["first", "second", "first", "first", "entries 1", "entries 0"]
            #expect(calls.all == expected, "\(invalidated) invalidated")
        }
    }

    /// One of two sources invalidated from another thread while the other keeps being told: after `invalidate()`
    /// returns, the first is never called again; the second never misses a report.
    @Test func oneInvalidatedFromAnotherThreadWhileTheOtherKeepsBeingTold() {
        let pipe = Pipe()
        defer { pipe.close() }
        let firstInvalidated = ItemsSupport.Flag()
        let lateCalls = Counter()
        let secondReads = Counter()
        let firstCalls = Counter()
        let running = ItemsSupport.startRunningLoop()
        let first = try! FileDescriptorSource(descriptor: pipe.readEnd, order: 0) { _, _ in
            if firstInvalidated.isSet { lateCalls.increment() }
            firstCalls.increment()
        }
        let second = try! FileDescriptorSource(descriptor: pipe.readEnd, order: 1) { _, _ in
            var byte: UInt8 = 0
            while read(pipe.readEnd, &byte, 1) == 1 { secondReads.increment() }
        }
        try! running.loop.add(first)
        try! running.loop.add(second)
        let baseline = epollEntryCount(running.loop.poller.epoll)
        for round in 1...200 {
            pipe.write()
            guard waitUntil(timeout: .seconds(5), { secondReads.current == round }) else {
                Issue.record("round \(round): the second source missed the report")
                break
            }
            if round == 100 {
                #expect(firstCalls.current > 0)
                first.invalidate()
                firstInvalidated.set()
            }
        }
        let settled = ItemsSupport.Flag()
        running.loop.perform { settled.set() }
        #expect(waitUntil { settled.isSet })
        #expect(lateCalls.current == 0)
        #expect(epollEntryCount(running.loop.poller.epoll) == baseline, "still one entry, the second's")
        second.invalidate()
        running.finish()
    }

    /// `events = []` on one source watches nothing for it, hang-up included, while the other still watches.
    @Test func watchingNothingOnOneLeavesTheOtherWatching() throws {
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let pair = try! SocketPair()
            let quiet = try! FileDescriptorSource(descriptor: pair.first, events: []) { _, events in
                calls.append("quiet \(events)")
            }
            let loud = try! FileDescriptorSource(descriptor: pair.first) { source, events in
                calls.append("loud \(events)")
                pair.drainFirst()
                if events.contains(.hangUp) { source.invalidate() }
            }
            try! loop.add(quiet)
            try! loop.add(loud)
            pair.writeToSecond()
            ItemsSupport.run(loop) { calls.count >= 1 }
            Glibc.close(pair.second)  // The peer hangs up.
            ItemsSupport.run(loop) { !loud.isValid }
            _ = loop.run(in: .default, for: .milliseconds(50))  // The quiet one is not told of the hang-up.
            calls.append("quiet watches readable")
            quiet.events = .readable
            _ = loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true)
            quiet.invalidate()
            Glibc.close(pair.first)
        }
        #expect(
            calls.all == [
                "loud readable", "loud readable|hangUp", "quiet watches readable", "quiet readable|hangUp",
            ])
    }

    /// The descriptor is closed behind both sources' backs and its number reused: each is told `.invalid` once, with
    /// the reason, never the new file's events, and a run of their mode finishes.
    @Test func aDescriptorClosedBehindBothTellsEachOnce() {
        for noticedBy in ["events change", "new source"] {
            let calls = Recorder<String>()
            ItemsSupport.onLoopThread { loop in
                let old = Pipe()
                let number = old.readEnd
                let first = try! FileDescriptorSource(descriptor: number, events: []) { _, events in
                    calls.append("first \(events)")
                }
                let second = try! FileDescriptorSource(descriptor: number, events: .writable) { _, events in
                    calls.append("second \(events)")
                }
                try! loop.add(first)
                try! loop.add(second)
                let new = Pipe()
                precondition(moveDescriptor(new.readEnd, onto: number))
                new.write()
                var newcomer: FileDescriptorSource?
                if noticedBy == "events change" {
                    first.events = .readable  // EPOLL_CTL_MOD: ENOENT, the new file is not in the set.
                } else {
                    newcomer = try! FileDescriptorSource(descriptor: number) { _, _ in
                        calls.append("newcomer")
                        new.drain()
                        var buffer = [UInt8](repeating: 0, count: 8)
                        _ = read(number, &buffer, 8)
                    }
                    try! loop.add(newcomer!, to: "elsewhere")
                }
                calls.append("valid \(first.isValid) \(second.isValid), \(first.failure?.code.description ?? "-")")
                calls.append("run: \(loop.run(in: .default, for: .seconds(5)))")
                if let newcomer {
                    _ = loop.run(in: "elsewhere", for: .seconds(5), returnAfterSourceHandled: true)
                    newcomer.invalidate()
                }
                Glibc.close(number)
                Glibc.close(new.writeEnd)
                Glibc.close(old.writeEnd)
            }
            var expected = [
                "valid false false, badDescriptor", "first invalid", "second invalid", "run: finished",
            ]
            if noticedBy == "new source" { expected.append("newcomer") }
            #expect(calls.all == expected, "noticed by \(noticedBy)")
        }
    }

    /// Two threads add sources of one descriptor at the same moment, again and again: one registration, both told,
    /// nothing left behind. (The second add's `EPOLL_CTL_ADD` answers `EEXIST` before the loop's thread has heard of
    /// the first.)
    @Test func twoThreadsAddingSourcesOfOneDescriptorAtOnceShareOneRegistration() {
        let rounds = Reliability.size(200, soak: 5_000)
        let pipe = Pipe()
        defer { pipe.close() }
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(120))
        defer { running.finish() }
        let loop = running.loop
        let baseline = Self.footprint(of: loop)
        let round = Atomic<Int>(0)
        let added = Atomic<Int>(0)
        let calls = Counter()
        let failures = Recorder<String>()
        let adders = (0..<2).map { _ in
            TestThread {
                for current in 1...rounds {
                    while round.load(ordering: .acquiring) < current { sched_yield() }
                    let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { source, _ in
                        calls.increment()
                        source.invalidate()
                    }
                    do throws(LoopError) {
                        try loop.add(source)
                    } catch {
                        failures.append("round \(current): \(error)")
                    }
                    added.add(1, ordering: .releasing)
                }
            }
        }
        for current in 1...rounds {
            round.store(current, ordering: .releasing)
            #expect(waitUntil { added.load(ordering: .acquiring) == 2 * current })
            pipe.write()
            #expect(waitUntil { calls.current == 2 * current }, "round \(current): \(calls.current) calls")
            pipe.drain()
            guard calls.current == 2 * current else { break }
        }
        for adder in adders { adder.join() }
        #expect(failures.all.isEmpty, "\(failures.all.prefix(3))")
        #expect(Self.footprint(of: loop) == baseline)
    }

    /// An invalidation racing a new source's add on another thread, again and again: whichever comes first, the new
    /// source is told of readiness and nothing is left behind.
    @Test func anInvalidationRacingACompanionsAddNeverLeavesTheCompanionDeaf() {
        let rounds = Reliability.size(200, soak: 5_000)
        let pipe = Pipe()
        defer { pipe.close() }
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(120))
        defer { running.finish() }
        let loop = running.loop
        let baseline = Self.footprint(of: loop)
        let round = Atomic<Int>(0)
        let done = Atomic<Int>(0)
        let companionCalls = Counter()
        let current = Box<FileDescriptorSource>()
        let invalidator = TestThread {
            for index in 1...rounds {
                while round.load(ordering: .acquiring) < index { sched_yield() }
                current.value!.invalidate()
                done.add(1, ordering: .releasing)
            }
        }
        for index in 1...rounds {
            let old = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            try! loop.add(old)
            current.value = old
            let companion = try! FileDescriptorSource(descriptor: pipe.readEnd) { source, _ in
                companionCalls.increment()
                source.invalidate()
            }
            round.store(index, ordering: .releasing)
            try! loop.add(companion)  // Races the invalidation of `old`.
            #expect(waitUntil { done.load(ordering: .acquiring) == index })
            pipe.write()
            #expect(waitUntil { companionCalls.current == index }, "round \(index): the companion heard nothing")
            pipe.drain()
            guard companionCalls.current == index else { break }
        }
        invalidator.join()
        #expect(Self.footprint(of: loop) == baseline)
    }

    /// Two sources of one descriptor on a loop whose thread exits: both may join another loop, where they share a
    /// registration afresh and work.
    @Test func sharingSourcesMoveToAnotherLoopAfterTheirLoopsThreadExits() {
        let pipe = Pipe()
        defer { pipe.close() }
        let calls = Recorder<String>()
        let first = try! FileDescriptorSource(descriptor: pipe.readEnd, order: 0) { _, _ in calls.append("first") }
        let second = try! FileDescriptorSource(descriptor: pipe.readEnd, order: 1) { _, _ in
            calls.append("second")
            pipe.drain()
        }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(first)
            try! loop.add(second, to: .common)
            loop.run(in: .default, for: .zero)
        }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(first)
            try! loop.add(second)
            calls.append("entries \(Self.entries(loop))")
            pipe.write()
            ItemsSupport.run(loop) { calls.count >= 3 }
            first.invalidate()
            second.invalidate()
            calls.append("entries \(Self.entries(loop))")
        }
        #expect(calls.all == ["entries 3", "first", "second", "entries 2"])
    }

    /// A source registered by an add whose change the loop never applied (its thread exited between the add's
    /// registration and its change, which the closed inbox dropped; made here by registering without the change)
    /// is registered afresh by the next loop it joins, and works there. (It used to stay marked registered and go
    /// silently dead.)
    @Test func aSourceWhoseAddTheDeadLoopNeverAppliedWorksInItsNextLoop() {
        let pipe = Pipe()
        defer { pipe.close() }
        let calls = Counter()
        let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            calls.increment()
            pipe.drain()
        }
        ItemsSupport.onLoopThread { loop in
            #expect(source.bind(to: loop))
            try! loop.register(source)  // The add's first half; its change never reaches the loop.
        }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(source)
            pipe.write()
            ItemsSupport.run(loop, timeout: .seconds(5)) { calls.current > 0 }
            source.invalidate()
        }
        #expect(calls.current == 1)
    }

    /// A descriptor in the loop's epoll set that no source of the loop registered (here put there by hand; in
    /// life, one of the loop's own descriptors) cannot be shared: `add` throws `descriptorAlreadyRegistered`.
    @Test func aDescriptorInTheSetThroughNoSourceThrowsAlreadyRegistered() {
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = Poller.wakeUpTag
            #expect(epoll_ctl(loop.poller.epoll, EPOLL_CTL_ADD, pipe.readEnd, &event) == 0)
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            let code: LoopError.Code?
            do throws(LoopError) {
                try loop.add(source)
                code = nil
            } catch {
                code = error.code
            }
            #expect(code == .descriptorAlreadyRegistered)
            #expect(!loop.contains(source))
            #expect(epoll_ctl(loop.poller.epoll, EPOLL_CTL_DEL, pipe.readEnd, &event) == 0)
            try! loop.add(source)  // Free again: it registers.
            source.invalidate()
        }
    }
}
