import Glibc
import RunLoopKit
import TestSupport
import Testing

@testable import RunLoopKitServices

/// An actor whose executor is a loop, making the services' sources and an exit handler through the loop's isolated
/// view: each handler is an actor-isolated closure that appends to `events` directly.
private actor ServiceModel {
    let loop: Loop
    var events: [String] = []
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop) { self.loop = loop }

    func addSources(directory: String, fifo: String, child: pid_t, shutdown: GracefulShutdown) throws -> [LoopItem] {
        let view = loop.assumeIsolated()
        let files = try view.makeFileChangeSource(watching: directory, for: .created) { source, change in
            self.events.append("file \(change.name ?? "")")
            source.invalidate()
        }
        let exits = try view.makeChildExitSource(pid: child) { _, status in
            self.events.append("child \(status)")
        }
        let trigger = try MemoryPressureTrigger(parsing: "some 150ms 2s")
        let pressure = try view.makeMemoryPressureSource(trigger: trigger, path: fifo) { source, event in
            self.events.append("pressure \(event)")
            source.invalidate()
        }
        // SIGURG is ignored by default: a stray delivery to the test process harms nothing.
        let signals = try view.makeSignalSource(signal: SIGURG) { source, _ in
            self.events.append("signal")
            source.invalidate()
        }
        view.onExit(of: shutdown) { self.events.append("exit") }
        view.perform { self.events.append("block") }
        view.perform(in: [.default, "other"]) { self.events.append("block in modes") }
        let timer = try view.makeTimer(after: .milliseconds(1)) { _ in self.events.append("timer after") }
        try view.schedule(after: .milliseconds(1)) { self.events.append("callback after") }
        let items: [LoopItem] = [files, exits, pressure, signals, timer]
        for item in items { try loop.add(item) }
        return items
    }
}

/// The services' sources and `GracefulShutdown`'s exit handlers through `Loop.Isolated`, and the view's `after:` and
/// `perform` forms: the same arguments as the plain forms, handlers in the caller's isolation.
@Suite struct IsolatedServicesTests {
    @Test func everyServiceSourceAndAnExitHandlerTouchTheActorsStateDirectly() async throws {
        let worker = try LoopThread(name: "isolated-services")
        defer { worker.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let fifo = directory.path("pressure.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let child = ChildProcess.exiting(with: 3)
        let shutdown = try GracefulShutdown(loop: worker.loop, signals: [])
        let model = ServiceModel(loop: worker.loop)
        let items = try await model.addSources(directory: directory.path, fifo: fifo, child: child, shutdown: shutdown)

        directory.write("made")
        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(writer >= 0, "open: errno \(errno)")
        #expect(write(writer, "pressure\n", 9) == 9)
        close(writer)
        kill(getpid(), SIGURG)
        let expected: Set = [
            "file made", "child exited(3)", "pressure thresholdExceeded", "signal", "block",
            "block in modes", "timer after", "callback after",
        ]
        #expect(await awaitCondition(timeout: .seconds(60)) { events(of: model, on: worker).count >= expected.count })
        #expect(Set(await model.events) == expected)

        #expect(shutdown.begin())
        #expect(await awaitCondition(timeout: .seconds(60)) { events(of: model, on: worker).last == "exit" })
        withExtendedLifetime(items) {}
    }

    /// The model's events, read on its loop's thread (where the actor runs) without suspending.
    private func events(of model: ServiceModel, on worker: LoopThread) -> [String] {
        (try? worker.performAndWait { model.assumeIsolated { $0.events } }) ?? []
    }

    /// An exit handler through a view of another loop than the shutdown's would run on the wrong thread: it traps,
    /// naming both loops.
    @Test func anExitHandlerThroughAnotherLoopsViewTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let shutdown = try! GracefulShutdown(loop: Loop.main, signals: [])
            let (_, thread) = startLoopThread { loop in
                loop.assumeIsolated().onExit(of: shutdown) {}
            }
            thread.join()
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Loop.Isolated.onExit(of:) was given a GracefulShutdown of the loop of thread"))
        #expect(text.contains("make the view there"))
    }
}
