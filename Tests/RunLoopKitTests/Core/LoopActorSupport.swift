import Glibc
import RunLoopKitSystem
import TestSupport

@testable import RunLoopKit

/// An actor isolated to a loop's thread, in the loop's common modes (or the modes of `executor`, when given).
/// Records its calls in order, with whether each ran on the loop's thread.
actor LoopBoundRecorder {
    let loop: Loop
    let executor: LoopExecutor?
    private(set) var entries: [String] = []
    private(set) var calls = 0
    private(set) var callsOffTheLoopThread = 0

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor?.asUnownedSerialExecutor() ?? loop.asUnownedSerialExecutor()
    }

    init(loop: Loop, executor: LoopExecutor? = nil) {
        self.loop = loop
        self.executor = executor
    }

    /// Appends `entry` to the shared `log` as well as to this actor's own record.
    func record(_ entry: String, in log: Recorder<String>? = nil) {
        calls += 1
        if !loop.isCurrent { callsOffTheLoopThread += 1 }
        entries.append(entry)
        log?.append(entry)
    }

    /// Counts one call and answers the count so far.
    func increment() -> Int {
        calls += 1
        if !loop.isCurrent { callsOffTheLoopThread += 1 }
        return calls
    }

    /// Where the call ran: whether on the loop's thread, and the kernel thread id.
    func whereAmI() -> (onLoopThread: Bool, threadID: pid_t) {
        (loop.isCurrent, ThreadIdentity.currentThreadID())
    }
}

/// Keeps the loop's thread inside one block until released, so work queued meanwhile waits for the next block point.
final class BusyBlock: Sendable {
    let entered = ItemsSupport.Flag()
    let release = ItemsSupport.Flag()

    /// Queues the busy block on `loop` and waits until it runs.
    func occupy(_ loop: Loop) -> Bool {
        loop.perform { [self] in
            entered.set()
            _ = waitUntil(timeout: .seconds(30)) { release.isSet }
        }
        return waitUntil { entered.isSet }
    }
}
