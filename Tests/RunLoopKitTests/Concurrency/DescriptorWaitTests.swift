import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

@Suite("Async descriptor readiness waits", .timeLimit(.minutes(2)))
struct DescriptorWaitTests {
    @Test func waitUntilReadableAnswersOnceDataArrivesAndLeavesNothingBehind() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let task = Task { try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable) }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 1 })
        pipe.write()
        let events = try #require(await AsyncSupport.result(of: task)).get()
        #expect(events.contains(.readable))
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }

    @Test func waitUntilWritableAnswersAtOnceForAnEmptyPipe() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let events = try await worker.loop.waitForReadiness(of: pipe.writeEnd, watching: .writable)
        #expect(events == .writable)
    }

    @Test func waitReportsAHangUp() async throws {
        let pipe = Pipe()
        defer { close(pipe.readEnd) }
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        close(pipe.writeEnd)
        let events = try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable)
        #expect(events.contains(.hangUp))
    }

    @Test func waitOnABadDescriptorThrowsBadDescriptor() async throws {
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let closed = ItemsSupport.closedDescriptorNumber(slot: 7)
        let result = await Result(catching: { try await worker.loop.waitForReadiness(of: closed, watching: .readable) })
        #expect(loopErrorCode(result) == .badDescriptor)
    }

    /// A wait on a descriptor another source of the loop watches shares its registration: both are told, and the
    /// wait leaves the other source's registration as it found it. (Before, the wait threw
    /// `descriptorAlreadyRegistered`.)
    @Test func waitOnADescriptorAnotherSourceWatchesSharesItsRegistration() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let otherCalls = Counter()
        let other = try FileDescriptorSource(descriptor: pipe.readEnd) { source, _ in
            otherCalls.increment()
            source.events = []  // Told once; it leaves the byte for the wait.
        }
        try worker.loop.add(other)
        defer { other.invalidate() }
        let before = AsyncSupport.footprint(of: worker)
        let task = Task { try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable) }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 2 })
        #expect(AsyncSupport.footprint(of: worker).epollEntries == before.epollEntries)  // One entry, shared.
        pipe.write()
        #expect(try #require(await AsyncSupport.result(of: task)).get().contains(.readable))
        #expect(await AsyncSupport.eventually { otherCalls.current == 1 })
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
        #expect(other.isValid && other.failure == nil)
    }

    @Test func waitOnADeadLoopThrowsLoopTerminated() async {
        let loop = AsyncSupport.deadLoop()
        let pipe = Pipe()
        defer { pipe.close() }
        let result = await Result(catching: { try await loop.waitForReadiness(of: pipe.readEnd, watching: .readable) })
        #expect(loopErrorCode(result) == .loopTerminated)
    }

    @Test func waitThrowsLoopTerminatedWhenTheThreadStopsDuringIt() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-fd")
        let task = Task { try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable) }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 1 })
        worker.stop()
        #expect(loopErrorCode(await AsyncSupport.result(of: task)) == .loopTerminated)
    }

    @Test func waitCancelledBeforeTheCallThrowsWithoutTouchingTheLoop() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let result = await Task {
            AsyncSupport.cancelCurrentTask()
            return try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable)
        }.result
        #expect(isCancellation(result))
        #expect(AsyncSupport.footprint(of: worker) == before)
    }

    @Test func waitCancelledDuringItResumesAtOnceAndUnregistersTheDescriptor() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let task = Task { try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable) }
        #expect(
            await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).epollEntries == before.epollEntries + 1 }
        )
        task.cancel()
        #expect(isCancellation(await AsyncSupport.result(of: task)))
        #expect(AsyncSupport.footprint(of: worker) == before)
        // The descriptor is free again: a later wait on it works.
        pipe.write()
        #expect(try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable).contains(.readable))
    }

    @Test func closingTheDescriptorRightAfterACancelledWaitIsSafe() async throws {
        let pipe = Pipe()
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let task = Task { try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable) }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 1 })
        // Hold the worker in a block, so it applies the cancelled wait's removal only after the number was reused.
        let release = ItemsSupport.Flag()
        worker.perform { _ = waitUntil { release.isSet } }
        task.cancel()
        #expect(isCancellation(await AsyncSupport.result(of: task)))
        // The caller closes the descriptor at once and its number comes back as a regular file (dup2 does both).
        var template = Array("/tmp/runloopkit-async-XXXXXX".utf8CString)
        let file = mkstemp(&template)
        try #require(file >= 0)
        unlink(template)
        #expect(moveDescriptor(file, onto: pipe.readEnd))
        release.set()
        // The loop removes the old registration (EPERM from epoll: not in the set) without trapping.
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
        pipe.close()
    }

    @Test func waitOnARegularFileThrowsNotPollable() async throws {
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        var template = Array("/tmp/runloopkit-async-XXXXXX".utf8CString)
        let file = mkstemp(&template)
        try #require(file >= 0)
        unlink(template)
        defer { close(file) }
        let before = AsyncSupport.footprint(of: worker)
        let result = await Result(catching: { try await worker.loop.waitForReadiness(of: file, watching: .readable) })
        #expect(loopErrorCode(result) == .descriptorNotPollable)
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }

    @Test func waitThrowsInvalidatedWhenTheLoopGivesUpAReusedDescriptor() async throws {
        let pipe = Pipe()
        let other = Pipe()
        let worker = try LoopThread(name: "async-fd")
        defer { worker.stop() }
        let task = Task { try await worker.loop.waitForReadiness(of: pipe.readEnd, watching: .readable) }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 1 })
        // Misuse: the watched descriptor is closed (the kernel drops it from the epoll set) and its number reused;
        // a new source for that number makes the loop invalidate the wait's source.
        #expect(dup2(other.readEnd, pipe.readEnd) == pipe.readEnd)
        let newcomer = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
        try worker.loop.add(newcomer)
        #expect(loopErrorCode(await AsyncSupport.result(of: task)) == .invalidated)
        newcomer.invalidate()
        _ = AsyncSupport.footprint(of: worker)  // The loop applied the invalidation before the pipes close.
        pipe.close()
        other.close()
    }
}
