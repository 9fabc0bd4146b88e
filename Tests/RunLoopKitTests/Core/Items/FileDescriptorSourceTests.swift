import Foundation
import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

import class TestSupport.Pipe

/// Descriptor sources: readiness kinds, per-pass handling, modes, errors, and descriptor-number reuse.
@Suite struct FileDescriptorSourceTests {
    @Test func readablePipeCallsTheHandlerOnTheLoopThread() {
        let calls = Recorder<String>()
        let pipe = Pipe()
        defer { pipe.close() }
        let sourceBox = Box<FileDescriptorSource>()
        let running = ItemsSupport.startRunningLoop { loop in
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, events in
                calls.append("\(events) \(Loop.current === loop)")
                pipe.drain()
            }
            try! loop.add(source)
            sourceBox.value = source
        }
        #expect(waitUntil { running.loop.isWaiting })
        pipe.write()
        #expect(waitUntil { calls.count == 1 })
        sourceBox.value?.invalidate()
        running.finish()
        #expect(calls.all == ["readable true"])
    }

    @Test func writablePipeEndReportsWritable() {
        let events = Recorder<FileDescriptorSource.Events>()
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let box = Box<FileDescriptorSource>()
            let source = try! FileDescriptorSource(descriptor: pipe.writeEnd, events: .writable) { _, ready in
                events.append(ready)
                box.value?.invalidate()
            }
            box.value = source
            try! loop.add(source)
            ItemsSupport.run(loop, timeout: .seconds(5)) { events.count > 0 }
        }
        #expect(events.all.count == 1)
        #expect(events.all.first?.contains(.writable) == true)
    }

    @Test func closingTheWriteEndReportsHangUp() {
        let events = Recorder<FileDescriptorSource.Events>()
        let pipe = Pipe()
        defer { Glibc.close(pipe.readEnd) }
        let sourceBox = Box<FileDescriptorSource>()
        let running = ItemsSupport.startRunningLoop { loop in
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, ready in
                events.append(ready)
                sourceBox.value?.invalidate()  // Level-triggered: a hang-up stays; stop watching.
            }
            try! loop.add(source)
            sourceBox.value = source
        }
        #expect(waitUntil { running.loop.isWaiting })
        Glibc.close(pipe.writeEnd)
        #expect(waitUntil { events.count == 1 })
        running.finish()
        #expect(events.all.count == 1)
        #expect(events.all.first?.contains(.hangUp) == true)
    }

    @Test func closingTheReadEndReportsErrorToAWriterWaitingForRoom() {
        let events = Recorder<FileDescriptorSource.Events>()
        let pipe = Pipe()
        defer { Glibc.close(pipe.writeEnd) }
        // Full: the write end is not writable, so only the error can make the source ready.
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while Glibc.write(pipe.writeEnd, &chunk, chunk.count) > 0 {}
        let sourceBox = Box<FileDescriptorSource>()
        let running = ItemsSupport.startRunningLoop { loop in
            let source = try! FileDescriptorSource(descriptor: pipe.writeEnd, events: .writable) { _, ready in
                events.append(ready)
                sourceBox.value?.invalidate()  // Level-triggered: the error stays; stop watching.
            }
            try! loop.add(source)
            sourceBox.value = source
        }
        #expect(waitUntil { running.loop.isWaiting })
        #expect(events.count == 0)
        Glibc.close(pipe.readEnd)  // No reader left: EPOLLERR on the write end, reported though not asked for.
        #expect(waitUntil { events.count == 1 })
        running.finish()
        #expect(events.all == [.error])
    }

    @Test func dataLeftBehindAHangUpIsReadableThenTheHangUpStays() {
        let events = Recorder<FileDescriptorSource.Events>()
        let pipe = Pipe()
        defer { Glibc.close(pipe.readEnd) }
        ItemsSupport.onLoopThread { loop in
            let box = Box<FileDescriptorSource>()
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, ready in
                events.append(ready)
                pipe.drain()
                if !ready.contains(.readable) { box.value?.invalidate() }
            }
            box.value = source
            try! loop.add(source)
            pipe.write()
            Glibc.close(pipe.writeEnd)
            ItemsSupport.run(loop, timeout: .seconds(5)) { !source.isValid }
        }
        // The byte and the hang-up together; once drained, the hang-up alone (level-triggered, so it stays).
        #expect(events.all == [[.readable, .hangUp], .hangUp])
    }

    @Test func everyReadyDescriptorIsHandledInTheSamePassLowerOrderFirst() {
        let events = Recorder<String>()
        let pipes = [Pipe(), Pipe(), Pipe()]
        defer { for pipe in pipes { pipe.close() } }
        ItemsSupport.onLoopThread { loop in
            let orders = [2, 0, 1]
            var sources: [FileDescriptorSource] = []
            for (index, pipe) in pipes.enumerated() {
                let name = "order\(orders[index])"
                let source = try! FileDescriptorSource(descriptor: pipe.readEnd, order: orders[index]) { _, _ in
                    events.append(name)
                    pipe.drain()
                }
                try! loop.add(source)
                sources.append(source)
            }
            let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
                events.append("\(activity)")
            }
            try! loop.add(observer)
            for pipe in pipes { pipe.write() }
            ItemsSupport.run(loop, timeout: .seconds(5)) { events.all.filter { $0.hasPrefix("order") }.count >= 3 }
            for source in sources { source.invalidate() }
        }
        let all = events.all
        let firstHandler = all.firstIndex { $0.hasPrefix("order") }
        #expect(firstHandler != nil)
        guard let firstHandler else { return }
        // The three handlers sit together, right after one afterWaiting and before the next beforeWaiting.
        #expect(all[firstHandler - 1] == "afterWaiting")
        #expect(Array(all[firstHandler..<min(firstHandler + 3, all.count)]) == ["order0", "order1", "order2"])
        #expect(all.filter { $0.hasPrefix("order") }.count == 3)
    }

    @Test func aDescriptorLeftReadyIsHandledAgainOnTheNextPass() {
        let calls = Counter()
        let results = Recorder<Loop.RunResult>()
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in calls.increment() }
            try! loop.add(source)
            pipe.write()
            for _ in 0..<3 {
                results.append(loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true))
            }
            source.invalidate()
        }
        #expect(calls.current == 3)
        #expect(results.all == [.handledSource, .handledSource, .handledSource])
    }

    @Test func sourceInAModeNotRunningWaitsForItsModeWithoutSpinning() {
        let calls = Recorder<String>()
        let passes = Counter()
        let results = Recorder<Loop.RunResult>()
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, events in
                calls.append("\(events) \(loop.currentMode?.name ?? "-")")
                pipe.drain()
            }
            try! loop.add(source, to: "other")
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in passes.increment() })
            pipe.write()
            results.append(loop.run(in: .default, for: .milliseconds(300)))
            results.append(loop.run(in: "other", for: .seconds(5), returnAfterSourceHandled: true))
            source.invalidate()
        }
        #expect(results.all == [.timedOut, .handledSource])
        #expect(calls.all == ["readable other"])
        #expect(passes.current <= 5, "the loop spun \(passes.current) passes while the descriptor was ready")
    }

    @Test func hangUpInAModeNotRunningDoesNotSpinTheLoop() {
        let calls = Recorder<FileDescriptorSource.Events>()
        let passes = Counter()
        let results = Recorder<Loop.RunResult>()
        let pipe = Pipe()
        defer { Glibc.close(pipe.readEnd) }
        ItemsSupport.onLoopThread { loop in
            let box = Box<FileDescriptorSource>()
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, events in
                calls.append(events)
                box.value?.invalidate()
            }
            box.value = source
            try! loop.add(source, to: "other")
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in passes.increment() })
            Glibc.close(pipe.writeEnd)  // A hang-up is reported whatever events were asked for.
            results.append(loop.run(in: .default, for: .milliseconds(300)))
            results.append(loop.run(in: "other", for: .seconds(5), returnAfterSourceHandled: true))
            source.invalidate()
        }
        #expect(results.all == [.timedOut, .handledSource])
        #expect(calls.all.count == 1 && calls.all.first?.contains(.hangUp) == true)
        #expect(passes.current <= 5, "the loop spun \(passes.current) passes while the descriptor hung up")
    }

    @Test func closedDescriptorAtInitThrowsBadDescriptor() {
        let closed = ItemsSupport.closedDescriptorNumber(slot: 0)
        var codes: [LoopError.Code] = []
        for descriptor in [-1, closed] {
            do throws(LoopError) {
                _ = try FileDescriptorSource(descriptor: descriptor) { _, _ in }
            } catch {
                codes.append(error.code)
            }
        }
        #expect(codes == [.badDescriptor, .badDescriptor])
    }

    @Test func descriptorClosedBeforeAddThrowsBadDescriptorAtAdd() {
        let codes = Recorder<LoopError.Code>()
        ItemsSupport.onLoopThread { loop in
            let pipe = Pipe()
            let high = fcntl(pipe.readEnd, F_DUPFD_CLOEXEC, ItemsSupport.highDescriptorFloor(slot: 9))
            pipe.close()
            let source = try! FileDescriptorSource(descriptor: high) { _, _ in }
            Glibc.close(high)
            do throws(LoopError) {
                try loop.add(source)
            } catch {
                codes.append(error.code)
            }
        }
        #expect(codes.all == [.badDescriptor])
    }

    @Test func regularFileThrowsDescriptorNotPollable() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rlk-\(UUID().uuidString)").path
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer {
            Glibc.close(descriptor)
            unlink(path)
        }
        let codes = Recorder<LoopError.Code>()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileDescriptorSource(descriptor: descriptor) { _, _ in }
            do throws(LoopError) {
                try loop.add(source)
            } catch {
                codes.append(error.code)
            }
        }
        #expect(codes.all == [.descriptorNotPollable])
    }

    @Test func reusedDescriptorNumberNeverReachesTheOldSource() {
        let calls = Recorder<String>()
        let validity = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            let old = Pipe()
            let oldSource = try! FileDescriptorSource(descriptor: old.readEnd) { _, events in
                calls.append("old \(events)")
            }
            try! loop.add(oldSource)
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .zero)
            // Close the old read end by putting a new pipe's read end on its number (atomic, so no other test
            // can take the number in between).
            let new = Pipe()
            let number = old.readEnd
            precondition(moveDescriptor(new.readEnd, onto: number))
            let newSource = try! FileDescriptorSource(descriptor: number) { _, _ in
                calls.append("new")
                var buffer = [UInt8](repeating: 0, count: 64)
                _ = read(number, &buffer, 64)
            }
            try! loop.add(newSource)
            new.write()
            ItemsSupport.run(loop, timeout: .seconds(5)) { calls.count >= 1 }
            loop.run(in: .default, for: .milliseconds(50))
            validity.append(oldSource.isValid)
            validity.append(newSource.isValid)
            newSource.invalidate()
            Glibc.close(number)
            Glibc.close(new.writeEnd)
            Glibc.close(old.writeEnd)
        }
        // The old source is told once that its descriptor is gone, and never sees the new file's events.
        #expect(calls.all == ["old invalid", "new"])
        #expect(validity.all == [false, true])
    }

    /// Closed behind the source's back and its number taken by another pipe (not watched by any source), then
    /// `events` is changed: the kernel answers `ENOENT` (the new file is not in the set). The source is invalidated
    /// with the reason, its handler is told once (``FileDescriptorSource/Events/invalid``), the new file is never
    /// watched in its place, and a run of the mode it was alone in finishes (before, `isValid` flipped with no reason
    /// recorded and no call; with no other item, `run()` never returned).
    @Test func changingEventsOfASourceWhoseDescriptorWasClosedInvalidatesItWithTheReason() {
        let outcome = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let old = Pipe()
            let number = old.readEnd
            let source = try! FileDescriptorSource(descriptor: number, events: []) { _, events in
                outcome.append("called \(events)")
            }
            try! loop.add(source)
            let new = Pipe()
            precondition(moveDescriptor(new.readEnd, onto: number))
            new.write()  // The new file is readable: watching it in the old source's place would call the handler.
            source.events = .readable
            outcome.append(
                "valid \(source.isValid), failure \(source.failure.map { "\($0.code) \($0.errno ?? 0)" } ?? "nil")")
            outcome.append("run: \(loop.run(in: .default, for: .seconds(5)))")
            Glibc.close(number)
            Glibc.close(new.writeEnd)
            Glibc.close(old.writeEnd)
        }
        #expect(outcome.all == ["valid false, failure badDescriptor \(ENOENT)", "called invalid", "run: finished"])
    }

    @Test func parkedSourceWhoseDescriptorNumberIsReusedNeverSeesTheNewDescriptor() {
        let calls = Recorder<String>()
        let results = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let old = Pipe()
            let number = old.readEnd
            let oldSource = try! FileDescriptorSource(descriptor: number) { _, events in calls.append("old \(events)") }
            try! loop.add(oldSource, to: "other")
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(ItemsSupport.keepAlive(), to: "other")
            old.write()
            // Ready while its mode is not running: the loop sets the descriptor aside.
            loop.run(in: .default, for: .milliseconds(50))
            // The old read end is closed by putting a new pipe's read end on its number; no source watches it.
            let new = Pipe()
            precondition(moveDescriptor(new.readEnd, onto: number))
            new.write()
            results.append("\(loop.run(in: "other", for: .milliseconds(200), returnAfterSourceHandled: true))")
            results.append("\(oldSource.isValid)")
            oldSource.invalidate()
            Glibc.close(number)
            Glibc.close(new.writeEnd)
            Glibc.close(old.writeEnd)
        }
        // Resuming it in "other" finds another file: its handler is told, in that mode, and nothing else.
        #expect(calls.all == ["old invalid"])
        #expect(results.all == ["handledSource", "false"])
    }

    @Test func sourceInvalidatedInItsHandlerIsNotCalledAgain() {
        let calls = Counter()
        let results = Recorder<Loop.RunResult>()
        let pipe = Pipe()
        defer { pipe.close() }
        ItemsSupport.onLoopThread { loop in
            let box = Box<FileDescriptorSource>()
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                calls.increment()
                box.value?.invalidate()  // Not drained: only invalidation keeps it from being called again.
            }
            box.value = source
            try! loop.add(source)
            pipe.write()
            results.append(loop.run(in: .default, for: .seconds(5)))
        }
        #expect(calls.current == 1)
        #expect(results.all == [.finished])
    }

    @Test func sourceAddedFromAnotherThreadToASleepingLoopIsHandled() {
        let calls = Recorder<Bool>()
        let pipe = Pipe()
        defer { pipe.close() }
        let running = ItemsSupport.startRunningLoop()
        let loop = running.loop
        let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            calls.append(Loop.current === loop)
            pipe.drain()
        }
        #expect(waitUntil { loop.isWaiting })
        try! loop.add(source)
        #expect(waitUntil { loop.isWaiting })
        pipe.write()
        #expect(waitUntil { calls.count == 1 })
        source.invalidate()
        running.finish()
        #expect(calls.all == [true])
    }
}

/// A descriptor source added from another thread and invalidated before the loop applied the add leaves nothing
/// behind: its descriptor is out of the epoll set (the loop does not spin on it) and a new source can watch it.
@Suite struct DescriptorAddInvalidateRaceTests {
    @Test func addedFromAnotherThreadThenInvalidatedAtOnceLeavesNothingBehind() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        pipe.write()  // Readable throughout: a stale registration would wake the loop on every pass.
        let wakeUps = Counter()
        let running = ItemsSupport.startRunningLoop { loop in
            try! loop.add(LoopObserver(activities: .afterWaiting) { _, _ in wakeUps.increment() })
        }
        defer { running.finish() }
        for _ in 0..<200 {
            let source = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            try running.loop.add(source)
            source.invalidate()
        }
        let settled = ItemsSupport.Flag()
        running.loop.perform { settled.set() }  // After every add and invalidation was applied.
        #expect(waitUntil { settled.isSet })
        let before = wakeUps.current
        #expect(!waitUntil(timeout: .milliseconds(300)) { wakeUps.current > before + 20 }, "the loop spins")
        let handled = Counter()
        let fresh = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in handled.increment() }
        try running.loop.add(fresh)
        #expect(waitUntil { handled.current > 0 })
        fresh.invalidate()
    }
}

/// An add whose source's descriptor was closed since the source was made is refused with `badDescriptor`, also
/// when the `Loop.current` of that very call created the loop and its epoll set took the closed number.
@Suite struct ClosedDescriptorAddTests {
    @Test func addingASourceWhoseDescriptorWasClosedThrowsBadDescriptor() throws {
        let code = Box<LoopError.Code>()
        let takenByTheLoop = Box<Bool>()
        let thread = TestThread {
            let pipe = Pipe()
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            let number = pipe.readEnd
            pipe.close()
            do throws(LoopError) {
                try Loop.current.add(source)  // Loop.current makes this thread's loop here, reusing low numbers.
            } catch {
                code.value = error.code
            }
            // The loop's own epoll set (pollDescriptor is another one, made when a host asks).
            takenByTheLoop.value =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(number)"))
                == "anon_inode:[eventpoll]"
        }
        thread.join()
        #expect(code.value == .badDescriptor)
        Reliability.report("closed descriptor: the new loop's epoll set took its number: \(takenByTheLoop.value!)")
    }
}
