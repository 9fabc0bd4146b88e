// A test executable with an async entry point that links RunLoopKitAsyncMain: after each `await`, is the code on
// the real main thread, inside a run of Loop.main? Tests/RunLoopKitTests/Concurrency/AsyncMainTests.swift runs it
// and reads its lines; it must exit with status 0 by returning from main (or 7 with the argument "exit-7").
import Dispatch
import Glibc
import RunLoopKit
import RunLoopKitAsyncMain

@main
struct AsyncMainCheck {
    static func main() async throws {
        ThreadIdentityCheck.recordMainThread()  // main() begins on the main thread, before any suspension.
        report("start")
        await Task.yield()
        report("after Task.yield")
        try await Task.sleep(for: .milliseconds(10))
        report("after Task.sleep")
        let fromDetached = await Task.detached { Loop.main.isCurrent ? "main" : "worker" }.value
        report("after a detached task (it ran on the \(fromDetached) thread)")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let timer = try! LoopTimer(after: .milliseconds(5)) { _ in continuation.resume() }
            try! Loop.main.add(timer)
        }
        report("after a Loop.main timer")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { DispatchQueue.main.async { continuation.resume() } }
        }
        report("after DispatchQueue.main work")
        print(
            "hook installed: \(AsyncMainOnLoop.isInstalled), took the main thread: \(AsyncMainOnLoop.hasTakenMainThread)"
        )
        if CommandLine.arguments.dropFirst().first == "exit-7" { exit(7) }
        print("returning from main")
    }

    @MainActor
    static func report(_ step: String) {
        let thread = ThreadIdentityCheck.onMainThread ? "main thread" : "NOT the main thread"
        let run = Loop.main.currentMode.map { "in a run of Loop.main (\($0))" } ?? "outside any run of Loop.main"
        print("\(step): \(thread), Loop.main.isCurrent=\(Loop.main.isCurrent), \(run)")
    }
}

enum ThreadIdentityCheck {
    nonisolated(unsafe) private static var mainThread = pthread_self()

    /// Records the calling thread as the main thread; called first thing in main(), before anything suspends.
    static func recordMainThread() { mainThread = pthread_self() }

    /// Whether the caller is the thread that began main().
    static var onMainThread: Bool { pthread_equal(pthread_self(), mainThread) != 0 }
}
