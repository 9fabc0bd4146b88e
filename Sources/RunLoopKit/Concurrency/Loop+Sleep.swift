extension Loop {
    /// Suspends the calling task until `deadline` on the loop's monotonic clock, measured by a one-shot
    /// ``LoopTimer`` on this loop that fires in a pass of `mode`: what ``LoopClock/sleep(until:tolerance:)`` does.
    /// Safe from any task or thread.
    ///
    /// Unlike `Task.sleep`, the wake-up is one of the loop's own timer events: it comes in the loop's pass order,
    /// only while `mode` runs, and shares the loop's wake-ups within `tolerance`. A deadline in the past fires in the
    /// loop's next pass of `mode`.
    ///
    /// Cancellation: a task cancelled before the call throws `CancellationError` without touching the loop; one
    /// cancelled while asleep resumes at once with `CancellationError` and its timer is invalidated.
    /// - Throws: ``LoopError/Code/loopTerminated`` when the loop's thread exits before the timer fires (or had
    ///   exited); ``LoopError/Code/invalidTolerance``; `CancellationError`.
    func sleep(until deadline: Instant, tolerance: Duration?, in mode: Mode) async throws {
        try await LoopWaiter<Void>.waitForItem(on: self, in: mode) { waiter, dropped throws(LoopError) in
            try LoopTimer(at: deadline, tolerance: tolerance) { _ in
                dropped.keepAlive()
                waiter.finish(.success(()))
            }
        }
    }
}
