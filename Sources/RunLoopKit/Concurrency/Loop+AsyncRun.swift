extension Loop {
    /// Runs `work` once on the loop's thread, at the next block point of a pass in `mode`, and returns its value
    /// to the awaiting task (or rethrows its error). Safe from any task or thread.
    ///
    /// The block is queued with ``perform(in:_:file:line:)-(Mode,_,_,_)``, so it waits for a pass in `mode` exactly as a
    /// performed block does; the default is ``Mode/default``, as for `perform`. Pass ``Mode/common`` to be served
    /// by nested runs in other common modes too.
    ///
    /// Cancellation: a task cancelled before the call throws `CancellationError` without queueing anything. A
    /// task cancelled while the block waits for its pass resumes at once with `CancellationError`, and the block,
    /// when its turn comes, is skipped (`work` never runs). Once `work` has started, cancellation no longer
    /// applies: the call waits for it and returns its result. So `CancellationError` always means `work` did not
    /// run.
    /// - Throws: What `work` throws; ``LoopError/Code/loopTerminated`` when the loop's thread exited before
    ///   `work` could run (the loop drops pending blocks then); `CancellationError` as above.
    @discardableResult
    nonisolated(nonsending) public func run<Value: Sendable>(
        in mode: Mode = .default,
        _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try await run(in: [mode], work)
    }

    /// Runs `work` once on the loop's thread, in a pass of any of `modes`, and returns its value to the awaiting
    /// task (or rethrows its error). Safe from any task or thread.
    ///
    /// See ``run(in:_:)-(Mode,_)`` for cancellation.
    /// - Throws: What `work` throws; ``LoopError/Code/invalidArgument`` for an empty `modes` (no pass could run
    ///   the block); ``LoopError/Code/loopTerminated`` when the loop's thread exited before `work` could run;
    ///   `CancellationError`.
    @discardableResult
    nonisolated(nonsending) public func run<Value: Sendable>(
        in modes: [Mode],
        _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        guard !modes.isEmpty else {
            throw LoopError(.invalidArgument, message: "Loop.run(in: []) names no mode whose pass could run the block")
        }
        return try await LoopWaiter<Value>.wait { waiter in
            let dropped = DropSignal { waiter.finish(.failure(Loop.terminatedError)) }
            let queued = perform(in: modes) {
                dropped.keepAlive()
                guard waiter.claim() else { return }
                waiter.finish(Result { try work() })
            }
            // A loop that terminates between the check in `perform` and the post never runs the block, and may
            // keep it; it runs no block once `isTerminated` is true.
            if !queued || isTerminated { waiter.finish(.failure(Loop.terminatedError)) }
        }
    }

    /// What waits on a loop whose thread exited throw.
    package static var terminatedError: LoopError {
        LoopError(.loopTerminated, message: "the loop's thread has exited")
    }
}
