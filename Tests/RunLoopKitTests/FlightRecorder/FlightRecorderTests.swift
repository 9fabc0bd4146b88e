import Glibc
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Spins for `duration` on the calling thread (a stall, as a long computation would cause).
private func busyWait(_ duration: Duration) {
    let end = Loop.Instant.now + duration
    while Loop.Instant.now < end {}
}

/// This file's `#fileID`, as the recorder reports the call sites below.
private let thisFile = "RunLoopKitTests/FlightRecorderTests.swift"

/// Counts the calls of the C-function callbacks below (which capture nothing).
private let callsCounted = Atomic<Int>(0)

private func countCall() { callsCounted.add(1, ordering: .relaxed) }

/// Enables `thread`'s flight recorder and returns once a pass has begun under it: the recorder starts with the
/// loop's next pass, so work posted afterwards is recorded.
private func enableRecorder(on thread: LoopThread, passes: Int = 64, calloutsPerPass: Int = 64) throws {
    try thread.loop.enableFlightRecorder(passes: passes, calloutsPerPass: calloutsPerPass)
    let started = waitUntil {
        _ = try? thread.performAndWait {}
        return thread.loop.flightRecording()?.passes.isEmpty == false
    }
    #expect(started)
}

@Suite struct FlightRecorderTests {
    // MARK: Enabling

    @Test func aLoopRecordsNothingUntilItsRecorderIsEnabled() throws {
        let thread = try LoopThread(name: "fr-off")
        defer { thread.stop() }
        try thread.performAndWait {}
        #expect(thread.loop.flightRecording() == nil)
        try thread.loop.enableFlightRecorder(passes: 4, calloutsPerPass: 4)
        try thread.performAndWait {}
        #expect(thread.loop.flightRecording() != nil)
    }

    @Test func sizesOutOfRangeAreRefused() throws {
        let loop = try LoopThread(name: "fr-sizes")
        defer { loop.stop() }
        for (passes, callouts) in [(0, 4), (4, 0), (FlightRecorder.maximumPasses + 1, 4), (4, 5_000)] {
            #expect(throws: LoopError.self) {
                try loop.loop.enableFlightRecorder(passes: passes, calloutsPerPass: callouts)
            }
        }
    }

    @Test func aDisabledRecorderKeepsWhatItRecorded() throws {
        let thread = try LoopThread(name: "fr-disable")
        defer { thread.stop() }
        try enableRecorder(on: thread, passes: 8, calloutsPerPass: 8)
        try thread.performAndWait {}
        try thread.performAndWait { thread.loop.disableFlightRecorder() }
        let kept = try #require(thread.loop.flightRecording()).passes.last?.number
        for _ in 0..<5 { try thread.performAndWait {} }
        let recording = try #require(thread.loop.flightRecording())
        #expect(recording.passes.last?.number == kept)
        // What was in progress when it was disabled (the block that disabled it, its pass) was ended all the same.
        #expect(recording.passes.allSatisfy { !$0.isInProgress })
        #expect(recording.passes.flatMap(\.callouts).allSatisfy { !$0.isInProgress })
    }

    // MARK: The ring

    @Test func theRingKeepsTheLastPasses() throws {
        let thread = try LoopThread(name: "fr-ring")
        defer { thread.stop() }
        try enableRecorder(on: thread, passes: 4, calloutsPerPass: 8)
        for _ in 0..<20 { try thread.performAndWait {} }
        let recording = try #require(thread.loop.flightRecording())
        #expect(recording.passes.count == 4)
        let numbers = recording.passes.map(\.number)
        #expect(numbers == Array(numbers[0]..<numbers[0] + 4))  // The last four, in order.
        #expect(numbers[0] > 1)  // More than four passes ran: the oldest were overwritten.
        for pass in recording.passes {
            #expect(pass.duration >= .zero)
            #expect(pass.startedAt <= recording.takenAt)
        }
    }

    @Test func calloutsBeyondThePassCapacityAreCounted() throws {
        let thread = try LoopThread(name: "fr-overflow")
        defer { thread.stop() }
        let loop = thread.loop
        try enableRecorder(on: thread, passes: 16, calloutsPerPass: 2)
        let ran = Atomic<Int>(0)
        try thread.performAndWait {
            // Queued on the loop's thread during a block point: all six run at the next block point of this pass.
            for _ in 0..<6 { loop.perform { ran.add(1, ordering: .relaxed) } }
        }
        #expect(waitUntil { ran.load(ordering: .relaxed) == 6 })
        try thread.performAndWait {}
        let recording = try #require(loop.flightRecording())
        let crowded = recording.passes.filter { $0.droppedCallouts > 0 }
        #expect(!crowded.isEmpty)
        for pass in recording.passes { #expect(pass.callouts.count <= 2) }
        #expect(crowded.map(\.droppedCallouts).reduce(0, +) >= 5)  // 1 performAndWait block + 6, 2 kept per pass.
    }

    // MARK: Kinds and call sites

    @Test func eachKindIsRecordedWithWhereItWasMade() throws {
        let thread = try LoopThread(name: "fr-kinds")
        defer { thread.stop() }
        let loop = thread.loop
        try enableRecorder(on: thread, passes: 64, calloutsPerPass: 64)
        let done = Atomic<Int>(0)
        var pipeEnds: [CInt] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer {
            close(pipeEnds[0])
            close(pipeEnds[1])
        }
        let readEnd = pipeEnds[0]
        var lines: [Loop.FlightRecording.Callout.Kind: Int] = [:]

        lines[.source] = #line + 1
        let source = LoopSource { _ in done.add(1, ordering: .relaxed) }
        lines[.timer] = #line + 1
        let timer = try LoopTimer(after: .zero) { _ in done.add(1, ordering: .relaxed) }
        lines[.observer] = #line + 1
        let observer = LoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in
            done.add(1, ordering: .relaxed)
        }
        lines[.descriptor] = #line + 1
        let descriptor = try FileDescriptorSource(descriptor: readEnd) { source, _ in
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            source.invalidate()
            done.add(1, ordering: .relaxed)
        }
        try loop.add(source)
        try loop.add(timer)
        try loop.add(observer)
        try loop.add(descriptor)
        source.signal()
        var byte: UInt8 = 1
        #expect(write(pipeEnds[1], &byte, 1) == 1)
        lines[.block] = #line + 1
        loop.perform { done.add(1, ordering: .relaxed) }
        lines[.callback] = #line + 1
        try loop.schedule(at: .now) { done.add(1, ordering: .relaxed) }
        #expect(waitUntil { done.load(ordering: .relaxed) == 6 })
        try thread.performAndWait { source.invalidate() }

        let callouts = try #require(loop.flightRecording()).passes.flatMap(\.callouts)
        for (kind, line) in lines {
            let made = callouts.filter { $0.kind == kind && $0.line == line }
            #expect(made.count == 1, "\(kind) made at line \(line)")
            #expect(made.first?.file == thisFile)
            #expect(made.first?.isInProgress == false)
        }
    }

    @Test func aCallbackIsRecordedWhereItWasScheduledInEveryForm() throws {
        let thread = try LoopThread(name: "fr-callbacks")
        defer { thread.stop() }
        let loop = thread.loop
        try enableRecorder(on: thread)
        let ran = Atomic<Int>(0)
        let lines = try thread.performAndWait { () throws -> [Int] in
            // On the loop's thread: stored in its slot at once.
            let closure = #line + 1
            try loop.schedule(after: .zero) { ran.add(1, ordering: .relaxed) }
            let function = #line + 1
            try loop.schedule(after: .zero, tolerance: .milliseconds(1), in: .common, with: 3) { _ in countCall() }
            return [closure, function]
        }
        let remote = #line + 1  // From another thread: the site travels with the request.
        try loop.schedule(after: .zero, with: 4) { _ in countCall() }
        #expect(waitUntil { ran.load(ordering: .relaxed) == 1 && callsCounted.load(ordering: .relaxed) >= 2 })
        try thread.performAndWait {}
        let callouts = try #require(loop.flightRecording()).passes.flatMap(\.callouts).filter { $0.kind == .callback }
        #expect(Set(callouts.map(\.line)) == Set(lines + [remote]))
        #expect(callouts.allSatisfy { $0.file == thisFile })
        #expect(callouts.first?.description.hasPrefix("callback scheduled at \(thisFile):") == true)
    }

    @Test func aCallbackScheduledBeforeTheRecorderWasFirstEnabledHasNoSite() throws {
        let thread = try LoopThread(name: "fr-callback-before")
        defer { thread.stop() }
        let loop = thread.loop
        let fired = Atomic<Bool>(false)
        let callback = try loop.schedule(after: .milliseconds(50)) { fired.store(true, ordering: .relaxed) }
        #expect(callback.slot == -1)  // Scheduled from another thread, then stored while sites were not kept.
        try thread.performAndWait {}  // Stored now, before the recorder is enabled.
        try enableRecorder(on: thread)
        #expect(waitUntil { fired.load(ordering: .relaxed) })
        try thread.performAndWait {}
        let callouts = try #require(loop.flightRecording()).passes.flatMap(\.callouts).filter { $0.kind == .callback }
        #expect(callouts.count == 1)
        #expect(callouts.first?.file == nil)
        #expect(callouts.first?.line == 0)
    }

    @Test func aCallbacksCallSiteTakesNoRoomInItsSlot() {
        #expect(MemoryLayout<CallbackSlots.Slot>.stride == 40)
    }

    @Test func aFunctionCallAndAnActorJobAreRecorded() async throws {
        let thread = try LoopThread(name: "fr-calls")
        defer { thread.stop() }
        let loop = thread.loop
        try enableRecorder(on: thread)
        let line = #line + 1
        loop.perform(with: 7) { _ in }
        await Task(executorPreference: loop.taskExecutor) {}.value
        try thread.performAndWait {}
        let callouts = try #require(loop.flightRecording()).passes.flatMap(\.callouts)
        #expect(callouts.contains { $0.kind == .block && $0.file == thisFile && $0.line == line })
        #expect(callouts.contains { $0.kind == .actorJob && $0.file == nil })
    }

    @Test func aCalloutsDurationIsMeasured() throws {
        let thread = try LoopThread(name: "fr-duration")
        defer { thread.stop() }
        try enableRecorder(on: thread)
        let line = #line + 1
        thread.perform { busyWait(.milliseconds(20)) }
        try thread.performAndWait {}
        let callouts = try #require(thread.loop.flightRecording()).passes.flatMap(\.callouts)
        let slow = try #require(callouts.first { $0.file == thisFile && $0.line == line })
        #expect(slow.kind == .block)
        #expect(slow.duration >= .milliseconds(20))
        #expect(slow.description.hasPrefix("block performed at \(thisFile):\(line) ran "))
    }

    @Test func aBlocksCallSiteTakesNoRoomOfItsOwn() {
        // The site lies where a job's words would: a queued block is no larger than before it had one.
        #expect(MemoryLayout<BlockWork>.size == MemoryLayout<QueuedJob>.size + 1)
        #expect(MemoryLayout<FunctionCall>.size <= MemoryLayout<QueuedJob>.size)
        #expect(MemoryLayout<CallSite>.size == MemoryLayout<UInt>.size)
    }

    // MARK: Stall reports

    @Test func aStallReportNamesTheSlowBlock() throws {
        let watched = try LoopThread(name: "fr-stall")
        defer { watched.stop() }
        try enableRecorder(on: watched)
        let reports = Recorder<StallMonitor.Report>()
        let monitor = try StallMonitor(loop: watched.loop) { reports.append($0) }
        defer { monitor.stop() }
        try watched.performAndWait {}  // The observers and the recorder are in place.

        let line = #line + 1
        watched.perform { busyWait(.milliseconds(300)) }
        #expect(waitUntil { reports.count >= 1 })
        try watched.performAndWait {}
        let report = try #require(reports.all.first)
        #expect(report.recording != nil)
        let longest = try #require(report.longestCallouts.first)
        #expect(longest.kind == .block)
        #expect(longest.file == thisFile)
        #expect(longest.line == line)
        #expect(longest.isInProgress)  // Reported while it was still running.
        #expect(longest.duration >= .milliseconds(50))
        #expect(report.description.contains("longest callout: block performed at \(thisFile):\(line) ran "))
        #expect(report.description.hasSuffix("(still running)"))
    }

    @Test func aStallReportWithoutARecorderHasNoRecording() throws {
        let watched = try LoopThread(name: "fr-stall-off")
        defer { watched.stop() }
        let reports = Recorder<StallMonitor.Report>()
        let monitor = try StallMonitor(loop: watched.loop) { reports.append($0) }
        defer { monitor.stop() }
        try watched.performAndWait {}
        try watched.performAndWait { busyWait(.milliseconds(200)) }
        #expect(waitUntil { reports.count >= 1 })
        let report = try #require(reports.all.first)
        #expect(report.recording == nil)
        #expect(report.longestCallouts.isEmpty)
        #expect(!report.description.contains("longest callout"))
    }

    // MARK: Reading from other threads

    @Test func snapshotsFromAnotherThreadWhileTheLoopRuns() throws {
        let thread = try LoopThread(name: "fr-readers")
        defer { thread.stop() }
        let loop = thread.loop
        try loop.enableFlightRecorder(passes: 8, calloutsPerPass: 4)
        let fired = Atomic<Int>(0)
        let timer = try LoopTimer(after: .zero, repeating: .microseconds(200)) { _ in
            fired.add(1, ordering: .relaxed)
        }
        try loop.add(timer)
        defer { timer.invalidate() }
        let stopPosting = Atomic<Bool>(false)
        let poster = JoinableThread {
            while !stopPosting.load(ordering: .relaxed) {
                for _ in 0..<8 { loop.perform {} }
                usleep(100)
            }
        }
        var copies = 0
        let end = Loop.Instant.now + .milliseconds(300)
        while Loop.Instant.now < end {
            let recording = try #require(loop.flightRecording())
            let numbers = recording.passes.map(\.number)
            #expect(numbers == numbers.sorted())
            #expect(Set(numbers).count == numbers.count)
            #expect(recording.passes.count <= 8)
            for pass in recording.passes {
                #expect(pass.callouts.count <= 4)
                #expect(pass.duration >= .zero)
                for callout in pass.callouts { #expect(callout.duration >= .zero) }
            }
            copies += 1
        }
        stopPosting.store(true, ordering: .relaxed)
        poster.join()
        #expect(copies > 10)
        #expect(fired.load(ordering: .relaxed) > 0)
    }
}
