import Foundation
import RunLoopKit
import Synchronization

// The README's examples, each inside a function that returns what the tests check. ReadmeExamplesTests verifies
// that every example block of README.md appears here line for line (leading spaces aside), so the page cannot
// show code that does not compile.

enum ReadmeExamples {
    /// "Signal another thread's loop": answers how many performs ran.
    static func signalAnotherThreadsLoop() -> Int {
        let performed = Atomic<Int>(0)
        let source = LoopSource {
            // Runs on the worker's thread, once per signalled state (signals coalesce).
            performed.add(1, ordering: .relaxed)
        }
        let worker = Thread {
            let loop = Loop.current  // the worker's loop, created on first use
            try! loop.add(source)  // schedule it in the default mode
            while source.isValid {  // sleeps in epoll_wait between signals
                loop.run(in: .default, for: .seconds(1))
            }
        }
        worker.start()
        for _ in 1...3 {
            source.signal()  // mark it AND wake the worker's loop: one call
            Thread.sleep(forTimeInterval: 0.1)
        }
        source.invalidate()  // the worker's run returns; the thread exits
        return performed.load(ordering: .relaxed)
    }

    /// "A keep-alive worker thread": answers the two values it computed.
    static func keepAliveWorker() async throws -> (Int, Int) {
        let worker = try LoopThread(name: "net")
        worker.perform { print("runs on the worker") }  // fire and forget; false once stopped
        let sum = try worker.performAndWait { (1...10).reduce(0, +) }  // run there, wait for the value
        let count = try await worker.run { 42 }  // the same, from async code
        worker.stop()  // accepted work runs, then the thread exits
        return (sum, count)
    }

    /// "A timer": answers how many times it fired.
    static func timer() throws -> Int {
        let loop = Loop.current
        let ticks = Atomic<Int>(0)
        let every20ms = Duration.milliseconds(20)
        let heartbeat = try LoopTimer(after: every20ms, repeating: every20ms, tolerance: .milliseconds(10)) { _ in
            ticks.add(1, ordering: .relaxed)
        }
        try loop.add(heartbeat)
        loop.run(in: .default, for: .milliseconds(200))  // about 10 ticks
        heartbeat.invalidate()
        return ticks.load(ordering: .relaxed)
    }

    /// "A one-shot timeout": answers whether the timeout ran (it must not: the reply came first).
    static func oneShotTimeout() throws -> Bool {
        let loop = Loop.current
        let timedOut = Atomic<Bool>(false)
        let timeout = try loop.schedule(after: .seconds(5)) { timedOut.store(true, ordering: .relaxed) }
        try loop.schedule(after: .milliseconds(10)) { loop.cancel(timeout) }  // the reply came in time
        loop.run()  // returns once nothing is scheduled any more
        return timedOut.load(ordering: .relaxed)
    }

    /// "A descriptor source".
    static func descriptorSource() throws {
        var ends: [CInt] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let reader = try FileDescriptorSource(descriptor: readEnd) { source, events in
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = read(readEnd, &buffer, buffer.count)
            print("read \(count) bytes (\(events))")
            source.invalidate()  // a handler is handed its source
        }
        try Loop.current.add(reader)
        _ = write(writeEnd, "hello", 5)
        Loop.current.run(in: .default, for: .seconds(1))
        close(readEnd)
        close(writeEnd)
    }

    /// "An observer": answers it, added to the calling thread's loop.
    static func observer() throws -> LoopObserver {
        let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { activity in
            print(activity == .beforeWaiting ? "going to sleep" : "woke up")
        }
        try Loop.current.add(observer, to: .common)
        return observer
    }

    /// "Work at a chosen point of a pass": answers the scheduler, on the calling thread's loop.
    static func phaseTasks() throws -> PhaseTaskScheduler {
        let phases = try PhaseTaskScheduler(loop: .current)
        phases.schedule(at: .currentPassEnds) { print("after this pass's events, before the loop sleeps") }
        phases.schedule(at: .idle) { print("when nothing else is left to do") }
        return phases
    }

    /// "Hang detection".
    static func stallMonitor() throws {
        let monitor = try StallMonitor(loop: .main, threshold: .milliseconds(250), consecutiveChecks: 5) { report in
            print("main loop stalled: \(report)")
        }
        // ... for the life of the program; then:
        monitor.stop()
    }

    /// "An app on the main loop": compiled only (it must run on the main thread; the main-task scenario of
    /// Tests/main-loop-check runs the same shape).
    static func appOnTheMainLoop() {
        Task { @MainActor in
            let data = try await download()  // resumes on the main thread, inside a pass of Loop.main
            show(data)
            Loop.main.stop()  // run() below returns: the program ends
        }
        Loop.main.run()
    }

    static func download() async throws -> [UInt8] { [] }
    @MainActor static func show(_ data: [UInt8]) {}
}

// "An actor on its own thread".
actor Database {
    let thread: LoopThread  // keeps the thread alive as long as the actor
    init() throws { thread = try LoopThread(name: "db") }
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.loop.asUnownedSerialExecutor() }
    func query() -> Int { 42 }  // runs on the "db" thread, inside its loop's passes
}
