import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// An actor whose executor is a loop, with state the isolated handlers below touch directly.
actor LoopModelActor {
    let loop: Loop
    var events: [String] = []
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop) { self.loop = loop }

    func record(_ event: String) { events.append(event) }

    /// Makes an item of every kind, and a one-shot callback, through the loop's isolated view: each handler is an
    /// actor-isolated closure, not `@Sendable`, that appends to `events` directly.
    func addItems(readEnd: CInt) throws -> [LoopItem] {
        let view = loop.assumeIsolated()
        let source = view.makeSource { source in
            self.events.append("source")
            source.invalidate()
        }
        let descriptor = try view.makeDescriptorSource(descriptor: readEnd) { source, _ in
            self.events.append("descriptor")
            source.invalidate()
        }
        let observer = view.makeObserver(activities: .beforeWaiting, repeats: false) { _, _ in
            self.events.append("observer")
        }
        let timer = try view.makeTimer(at: .now + .milliseconds(1)) { _ in self.events.append("timer") }
        for item in [source, descriptor, observer, timer] as [LoopItem] { try loop.add(item) }
        try view.schedule(at: .now + .milliseconds(1)) { self.events.append("callback") }
        source.signal()
        return [source, descriptor, observer, timer]
    }
}

/// Items made through `Loop.assumeIsolated()` (`Loop.Isolated`): their handlers are not `@Sendable` and run on the
/// loop's thread in the caller's isolation, so an actor on the loop touches its state directly; the items are pinned
/// to that loop. (Main-actor code on `Loop.main` is checked on the real main thread by `MainQueueTests`, scenario
/// "main-actor-handlers"; the traps of a wrong thread or isolation by the exit tests below.)
@Suite struct IsolatedHandlerTests {
    @Test func everyKindOfItemTouchesTheActorsStateDirectly() async throws {
        let worker = try LoopThread(name: "isolated-items")
        defer { worker.stop() }
        let model = LoopModelActor(loop: worker.loop)
        let pipe = Pipe()
        defer { pipe.close() }
        let items = try await model.addItems(readEnd: pipe.readEnd)
        pipe.write()
        let expected: Set = ["source", "descriptor", "observer", "timer", "callback"]
        #expect(await awaitCondition(timeout: .seconds(60)) { Set(worker.loopEvents(of: model)) == expected })
        #expect(Set(await model.events) == expected)
        withExtendedLifetime(items) {}
    }

    @Test func anActorOnALoopExecutorForOtherModesCountsAsItsLoop() async throws {
        let worker = try LoopThread(name: "isolated-executor")
        defer { worker.stop() }
        let executor = try worker.loop.executor(in: [.default, "tracking"])
        let model = TrackingActor(executor: executor)
        let timer = try await model.startTimer()
        #expect(await awaitCondition(timeout: .seconds(60)) { !timer.isValid })
        #expect(await model.ticks == 1)
    }

    /// The items are pinned: another loop refuses them (`ownedByAnotherLoop`), as it refuses any item of a live loop,
    /// and so does a loop made later, once their loop's thread has exited (an ordinary item could move then).
    @Test func itemsMadeThroughTheViewStayOnTheirLoop() async throws {
        let home = try LoopThread(name: "isolated-home")
        let elsewhere = try LoopThread(name: "isolated-elsewhere")
        defer { elsewhere.stop() }
        let model = LoopModelActor(loop: home.loop)
        let timer = try await model.makeIdleTimer()
        #expect { try elsewhere.loop.add(timer) } throws: { ($0 as? LoopError)?.code == .ownedByAnotherLoop }
        home.stop()
        #expect(await awaitCondition(timeout: .seconds(60)) { home.loop.isTerminated })
        #expect { try elsewhere.loop.add(timer) } throws: { ($0 as? LoopError)?.code == .ownedByAnotherLoop }
        // An ordinary timer of a dead loop may move, as in CF.
        let ordinary = try LoopTimer(at: .distantFuture) { _ in }
        let dying = try LoopThread(name: "isolated-dying")
        try dying.loop.add(ordinary)
        dying.stop()
        #expect(await awaitCondition(timeout: .seconds(60)) { dying.loop.isTerminated })
        try elsewhere.loop.add(ordinary)
    }

    /// The view is for the loop's own thread, in an isolation that runs there: anything else traps, saying why.
    @Test func theViewOffItsLoopsThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let running = ItemsSupport.startRunningLoop()
            _ = running.loop.assumeIsolated()
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("must be called on the loop's own thread"))
    }

    @Test func theViewFromAnActorThatRunsElsewhereTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // A default actor whose job runs on a loop's thread, under that loop's task executor preference: its
            // handlers could later run while the actor runs on another thread, so the view refuses it.
            let worker = try! LoopThread(name: "isolated-stray")
            await withTaskExecutorPreference(worker.taskExecutor) {
                await DefaultExecutorActor().viewOf(worker.loop)
            }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("from an actor whose executor is not this loop"))
    }

    @Test func theMainActorsViewOfAnotherLoopTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let loop = Loop.current  // The main thread's: exit tests run their body on a thread of their own.
                _ = loop.assumeIsolated()
            }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Loop.assumeIsolated()") || text.contains("must be called on the loop's own thread"))
    }
}

/// An actor on a loop executor for several modes.
private actor TrackingActor {
    let executor: LoopExecutor
    var ticks = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    init(executor: LoopExecutor) { self.executor = executor }

    func startTimer() throws -> LoopTimer {
        let timer = try executor.loop.assumeIsolated().makeTimer(at: .now) { _ in self.ticks += 1 }
        try executor.loop.add(timer)
        return timer
    }
}

extension LoopModelActor {
    /// A timer made through the view and left unscheduled.
    func makeIdleTimer() throws -> LoopTimer {
        try loop.assumeIsolated().makeTimer(at: .distantFuture) { _ in self.events.append("t") }
    }
}

/// An actor on the runtime's default executor.
private actor DefaultExecutorActor {
    func viewOf(_ loop: Loop) {
        _ = loop.assumeIsolated()
    }
}

extension LoopThread {
    /// The actor's events, read on the loop's thread (where the actor is isolated) without an `await`.
    fileprivate func loopEvents(of model: LoopModelActor) -> [String] {
        (try? performAndWait { model.assumeIsolated { $0.events } }) ?? []
    }
}
