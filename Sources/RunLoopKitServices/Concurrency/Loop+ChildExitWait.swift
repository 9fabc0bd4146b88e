import Glibc
import RunLoopKit
import RunLoopKitSystem

extension Loop {
    /// Suspends the calling task until the child process `pid` ends, watched by a ``ChildExitSource`` on this loop
    /// whose report comes in a pass of `mode`; answers how it ended (it has been reaped then). Safe from any task or
    /// thread.
    ///
    /// Cancellation: a task cancelled before the call throws `CancellationError` without touching the loop; one
    /// cancelled while waiting resumes at once with `CancellationError`, and the source is invalidated (the child is
    /// then not reaped by this wait).
    /// - Throws: What ``ChildExitSource/init(pid:order:handler:)`` throws (`pid` is not a child of this process;
    ///   no `pidfd_open`; descriptors exhausted); `LoopError.Code.loopTerminated` when the loop's thread exits
    ///   before the child does (or had exited); `CancellationError`.
    nonisolated(nonsending) public func waitForExit(
        of pid: pid_t, in mode: Mode = .default
    ) async throws -> ChildExitStatus {
        try await LoopWaiter<ChildExitStatus>.waitForItem(on: self, in: mode) { waiter, dropped throws(LoopError) in
            try ChildExitSource(pid: pid) { _, status in
                dropped.keepAlive()
                waiter.finish(.success(status))
            }
        }
    }
}
