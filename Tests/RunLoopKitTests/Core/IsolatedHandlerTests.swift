import Glibc
import Synchronization
import Testing

@testable import RunLoopKit

/// An actor whose executor is a loop, with state the isolated handlers below touch directly.
actor LoopModelActor {
    let loop: Loop
    var events: [String] = []
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop) { self.loop = loop }

    func record(_ event: String) { events.append(event) }
}

/// Items whose handlers are isolated to an actor on the loop (`isolatedTo:`): they run on the loop's thread with
/// the actor's state at hand, and a loop that is not the actor's executor refuses them. (`@MainActor` handlers are
/// checked on the real main thread by `MainQueueTests`, scenario "main-actor-handlers".)
@Suite struct IsolatedHandlerTests {
    @Test func everyKindOfItemTouchesTheActorsStateDirectly() async throws {
        let worker = try LoopThread(name: "isolated-items")
        defer { worker.stop() }
        let loop = worker.loop
        let model = LoopModelActor(loop: loop)
        let pipe = Pipe()
        defer { pipe.close() }
        let source = LoopSource(isolatedTo: model) { model, source in
            model.events.append("source")
            source.invalidate()
        }
        let descriptor = try FileDescriptorSource(descriptor: pipe.readEnd, isolatedTo: model) { model, source, _ in
            model.events.append("descriptor")
            source.invalidate()
        }
        let observer = LoopObserver(activities: .beforeWaiting, repeats: false, isolatedTo: model) { model, _, _ in
            model.events.append("observer")
        }
        let timer = try LoopTimer(after: .milliseconds(1), isolatedTo: model) { model, _ in
            model.events.append("timer")
        }
        try loop.add(source)
        try loop.add(descriptor)
        try loop.add(observer)
        try loop.add(timer)
        try loop.schedule(after: .milliseconds(1), isolatedTo: model) { model in model.events.append("callback") }
        source.signal()
        pipe.write()
        let expected: Set = ["source", "descriptor", "observer", "timer", "callback"]
        #expect(await awaitCondition(timeout: .seconds(60)) { Set(worker.loopEvents(of: model)) == expected })
        #expect(Set(await model.events) == expected)
    }

    @Test func anActorOnALoopExecutorForOtherModesCountsAsItsLoop() async throws {
        let worker = try LoopThread(name: "isolated-executor")
        defer { worker.stop() }
        let executor = try worker.loop.executor(in: [.default, "tracking"])
        let model = TrackingActor(executor: executor)
        let timer = try LoopTimer(after: .zero, isolatedTo: model) { model, _ in model.ticks += 1 }
        try worker.loop.add(timer)
        #expect(await awaitCondition(timeout: .seconds(60)) { !timer.isValid })
        #expect(await model.ticks == 1)
    }

    /// Another loop refuses the items (`isolationMismatch`), which stay free and join the right loop afterwards;
    /// so does a loop for an actor on the default executor.
    @Test func aLoopThatIsNotTheActorsExecutorRefusesItsItems() async throws {
        let home = try LoopThread(name: "isolated-home")
        let elsewhere = try LoopThread(name: "isolated-elsewhere")
        defer {
            home.stop()
            elsewhere.stop()
        }
        let model = LoopModelActor(loop: home.loop)
        let timer = try LoopTimer(after: .milliseconds(1), isolatedTo: model) { model, _ in model.events.append("t") }
        #expect { try elsewhere.loop.add(timer) } throws: { Self.isMismatch($0) }
        #expect { try elsewhere.loop.schedule(after: .zero, isolatedTo: model) { _ in } } throws: {
            Self.isMismatch($0)
        }
        let onDefaultExecutor = DefaultExecutorActor()
        let stray = LoopSource(isolatedTo: onDefaultExecutor) { _, _ in }
        #expect { try home.loop.add(stray) } throws: { Self.isMismatch($0) }
        // A @MainActor handler on a loop that is not the main loop.
        let mainOnly = try LoopTimer(after: .zero) { @MainActor _ in }
        #expect { try home.loop.add(mainOnly) } throws: { Self.isMismatch($0) }

        try home.loop.add(timer)  // Still free: the refusal bound it to nothing.
        #expect(await awaitCondition(timeout: .seconds(60)) { !timer.isValid })
        #expect(await model.events == ["t"])
    }

    private static func isMismatch(_ error: any Error) -> Bool {
        (error as? LoopError)?.code == .isolationMismatch
    }
}

/// An actor on a loop executor for several modes.
private actor TrackingActor {
    let executor: LoopExecutor
    var ticks = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    init(executor: LoopExecutor) { self.executor = executor }
}

/// An actor on the runtime's default executor.
private actor DefaultExecutorActor {}

extension LoopThread {
    /// The actor's events, read on the loop's thread (where the actor is isolated) without an `await`.
    fileprivate func loopEvents(of model: LoopModelActor) -> [String] {
        (try? performAndWait { model.assumeIsolated { $0.events } }) ?? []
    }
}
