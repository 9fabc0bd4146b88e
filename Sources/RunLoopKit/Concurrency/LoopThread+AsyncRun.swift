extension LoopThread {
    /// Runs `work` once on the worker, at the next block point of a pass in `mode`, and returns its value to the
    /// awaiting task (or rethrows its error): ``performAndWait(in:_:)-(Loop.Mode,_)`` without blocking a thread.
    /// Safe from any task or thread, the worker's own included (the task suspends; the worker runs the block).
    ///
    /// Cancellation: a task cancelled before the call throws `CancellationError` without queueing anything. A
    /// task cancelled while the block waits for its pass resumes at once with `CancellationError`, and the block
    /// is skipped when its turn comes. Once `work` has started, the call waits for it and returns its result.
    /// - Throws: What `work` throws; ``LoopError/Code/threadStopped`` once ``stop()`` has begun (before `work`
    ///   ran: blocks accepted before the stop still run) or in the child of a `fork()` for a `LoopThread` made
    ///   before it (see ``isStopped``); `CancellationError` as above.
    @discardableResult
    nonisolated(nonsending) public func run<Value: Sendable>(
        in mode: Loop.Mode = .default,
        _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try await run(in: [mode], work)
    }

    /// Runs `work` once on the worker, in a pass of any of `modes`, and returns its value to the awaiting task
    /// (or rethrows its error). Safe from any task or thread.
    ///
    /// See ``run(in:_:)-(Loop.Mode,_)`` for cancellation.
    /// - Throws: What `work` throws; ``LoopError/Code/invalidArgument`` for an empty `modes`;
    ///   ``LoopError/Code/threadStopped`` once ``stop()`` has begun or in a `fork()` child (see ``isStopped``);
    ///   `CancellationError`.
    @discardableResult
    nonisolated(nonsending) public func run<Value: Sendable>(
        in modes: [Loop.Mode],
        _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try await LoopWaiter<Value>.wait { waiter in
            // Accepted blocks always run; this only fires if the block is dropped unrun all the same.
            let name = self.name
            let dropped = DropSignal {
                waiter.finish(.failure(LoopError(.threadStopped, message: "the LoopThread \(name) stopped")))
            }
            do {
                try LoopThread.requireModes(modes)
            } catch {
                waiter.finish(.failure(error))
                return
            }
            let accepted = perform(in: modes) {
                dropped.keepAlive()
                guard waiter.claim() else { return }
                waiter.finish(Result { try work() })
            }
            if !accepted { waiter.finish(.failure(self.stoppedError())) }
        }
    }
}
