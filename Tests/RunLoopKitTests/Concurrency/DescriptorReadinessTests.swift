import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

@Suite("AsyncSequence of a descriptor's readiness", .timeLimit(.minutes(2)))
struct DescriptorReadinessTests {
    /// A task that awaits the sequence's first element (what it threw, if it threw) and then one more `next()`.
    static func firstAndAfter(
        _ readiness: DescriptorReadiness
    ) -> Task<(Result<FileDescriptorSource.Events?, any Error>, FileDescriptorSource.Events?), any Error> {
        Task {
            var iterator = readiness.makeAsyncIterator()
            let first = await Result(catching: { try await iterator.next() })
            let after = try await iterator.next()
            return (first, after)
        }
    }

    @Test func readsEveryWriteExactlyAndLeavesNothingBehind() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-seq")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let total = 2_000
        let writer = TestThread {
            for index in 0..<total {
                pipe.write(UInt8(truncatingIfNeeded: index))
                if index % 64 == 0 { sched_yield() }
            }
        }
        defer { writer.join() }
        var received: [UInt8] = []
        var reports = 0
        for try await events in worker.loop.readiness(of: pipe.readEnd) {
            #expect(events.contains(.readable))
            reports += 1
            received += readToEnd(pipe.readEnd)
            if received.count >= total { break }
        }
        #expect(received == (0..<total).map { UInt8(truncatingIfNeeded: $0) })
        #expect(reports <= total)
        // Breaking out dropped the iterator, which invalidated its source.
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }

    @Test func aSlowConsumerDoesNotMakeTheLoopSpin() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-seq")
        defer { worker.stop() }
        let passes = Counter()
        let observer = LoopObserver(activities: .beforeTimers) { _, _ in passes.increment() }
        try worker.loop.add(observer)
        defer { observer.invalidate() }
        pipe.write()
        var iterator = worker.loop.readiness(of: pipe.readEnd).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.contains(.readable) == true)
        // The consumer does not read for a while: the descriptor stays ready, nobody waits for it.
        let passesBefore = passes.current
        let window = ContinuousClock.now + .milliseconds(300)
        while ContinuousClock.now < window { try await Task.sleep(for: .milliseconds(20)) }
        let idlePasses = passes.current - passesBefore
        AsyncSupport.report("loop passes in 300 ms with a ready descriptor and a slow consumer: \(idlePasses)")
        #expect(idlePasses <= 20, "the loop went round \(idlePasses) times while nobody waited")
        // Nothing was lost: the next demand answers at once, the data is still there.
        let second = try await iterator.next()
        #expect(second?.contains(.readable) == true)
        #expect(readToEnd(pipe.readEnd) == [1])
    }

    @Test func aPendingNextThrowsLoopTerminatedWhenTheThreadStops() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-seq")
        let readiness = worker.loop.readiness(of: pipe.readEnd)
        let task = Self.firstAndAfter(readiness)
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 1 })
        worker.stop()
        let (first, after) = try #require(await AsyncSupport.result(of: task)).get()
        #expect(loopErrorCode(first) == .loopTerminated)
        #expect(after == nil)
    }

    @Test func iteratingOnADeadLoopThrowsLoopTerminated() async {
        let loop = AsyncSupport.deadLoop()
        let pipe = Pipe()
        defer { pipe.close() }
        var iterator = loop.readiness(of: pipe.readEnd).makeAsyncIterator()
        let result = await Result(catching: { try await iterator.next() })
        #expect(loopErrorCode(result) == .loopTerminated)
    }

    @Test func aBadDescriptorEndsTheSequenceWithBadDescriptor() async throws {
        let worker = try LoopThread(name: "async-seq")
        defer { worker.stop() }
        let closed = ItemsSupport.closedDescriptorNumber(slot: 8)
        var iterator = worker.loop.readiness(of: closed).makeAsyncIterator()
        let result = await Result(catching: { try await iterator.next() })
        #expect(loopErrorCode(result) == .badDescriptor)
        #expect(try await iterator.next() == nil)
    }

    @Test func aHangUpIsReportedAndEndOfFileEndsTheLoop() async throws {
        let pipe = Pipe()
        defer { close(pipe.readEnd) }
        let worker = try LoopThread(name: "async-seq")
        defer { worker.stop() }
        pipe.write(9)
        close(pipe.writeEnd)
        var received: [UInt8] = []
        var sawHangUp = false
        for try await events in worker.loop.readiness(of: pipe.readEnd) {
            sawHangUp = sawHangUp || events.contains(.hangUp)
            let bytes = readToEnd(pipe.readEnd)
            if bytes.isEmpty { break }
            received += bytes
        }
        #expect(received == [9])
        #expect(sawHangUp)
    }

    @Test func cancellationBeforeTheFirstNextThrowsWithoutTouchingTheLoop() async throws {
        let loop = AsyncSupport.deadLoop()  // Would answer loopTerminated if it were asked.
        let pipe = Pipe()
        defer { pipe.close() }
        let readiness = loop.readiness(of: pipe.readEnd)
        let (first, after) = await Task { () -> (Result<FileDescriptorSource.Events?, any Error>, Bool) in
            AsyncSupport.cancelCurrentTask()
            var iterator = readiness.makeAsyncIterator()
            let first = await Result(catching: { try await iterator.next() })
            let after = await Result(catching: { try await iterator.next() })
            return (first, (try? after.get()) == .some(nil))
        }.value
        #expect(isCancellation(first))
        #expect(after)
    }

    @Test func cancellationDuringNextResumesAtOnceAndEndsTheSequence() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-seq")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let readiness = worker.loop.readiness(of: pipe.readEnd)
        let task = Task { () -> Int in
            var count = 0
            for try await _ in readiness { count += 1 }
            return count
        }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 1 })
        task.cancel()
        #expect(isCancellation(await AsyncSupport.result(of: task)))
        #expect(AsyncSupport.footprint(of: worker) == before)
    }

    /// Two iterations of one descriptor on one loop share its registration (one entry in the epoll set): each is
    /// told of the readiness. (Before, the second threw `descriptorAlreadyRegistered`.)
    @Test func twoIterationsOfOneDescriptorOnOneLoopShareItsRegistration() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let worker = try LoopThread(name: "async-seq")
        defer { worker.stop() }
        let before = AsyncSupport.footprint(of: worker)
        let readiness = worker.loop.readiness(of: pipe.readEnd)
        let first = Task {
            var iterator = readiness.makeAsyncIterator()
            return try await iterator.next()
        }
        let second = Task {
            var iterator = readiness.makeAsyncIterator()
            return try await iterator.next()
        }
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 2 })
        let shared = AsyncSupport.footprint(of: worker)
        #expect(shared.registrations == before.registrations + 1)
        #expect(shared.epollEntries == before.epollEntries + 1)
        pipe.write()
        #expect(try #require(await AsyncSupport.result(of: first)).get()?.contains(.readable) == true)
        #expect(try #require(await AsyncSupport.result(of: second)).get()?.contains(.readable) == true)
        // Both iterators are gone: nothing is left.
        #expect(await AsyncSupport.footprint(of: worker, becomes: before))
    }

    @Test func theSequenceThrowsInvalidatedWhenTheLoopGivesUpAReusedDescriptor() async throws {
        let pipe = Pipe()
        let other = Pipe()
        let worker = try LoopThread(name: "async-seq")
        defer { worker.stop() }
        let readiness = worker.loop.readiness(of: pipe.readEnd)
        let task = Self.firstAndAfter(readiness)
        #expect(await AsyncSupport.eventually { AsyncSupport.footprint(of: worker).descriptorSources == 1 })
        #expect(dup2(other.readEnd, pipe.readEnd) == pipe.readEnd)
        let newcomer = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
        try worker.loop.add(newcomer)
        let (first, after) = try #require(await AsyncSupport.result(of: task)).get()
        #expect(loopErrorCode(first) == .invalidated)
        #expect(after == nil)
        newcomer.invalidate()
        _ = AsyncSupport.footprint(of: worker)
        pipe.close()
        other.close()
    }
}
