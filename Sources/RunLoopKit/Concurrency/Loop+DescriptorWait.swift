extension Loop {
    /// Suspends the calling task until one of `events` holds for `descriptor` in a pass of `mode` (say `.readable`
    /// before a read, `.writable` before a write), and answers the conditions seen (``DescriptorBackedSource/Events/error`` and ``DescriptorBackedSource/Events/hangUp`` are
    /// always reported). Safe from any task or thread.
    ///
    /// Built on a ``FileDescriptorSource`` added to `mode` for the wait and invalidated as soon as it ends, so
    /// the descriptor leaves the loop's epoll set whatever happens (unless other sources of the loop watch it: the
    /// wait shares their registration, and several waits on one descriptor share one too). The descriptor stays
    /// yours: do not close it while a wait is pending (cancel the task first).
    ///
    /// Cancellation: a task cancelled before the call throws `CancellationError` without touching the loop; one
    /// cancelled while waiting resumes at once with `CancellationError`, its source invalidated.
    /// - Throws: ``LoopError/Code/badDescriptor``, ``LoopError/Code/descriptorNotPollable``,
    ///   ``LoopError/Code/descriptorAlreadyRegistered`` (one of the loop's own descriptors);
    ///   ``LoopError/Code/loopTerminated`` when the loop's thread exits before the descriptor is ready (or had
    ///   exited); ``LoopError/Code/invalidated`` when the loop gave up the source because the descriptor was
    ///   closed (and its number reused) during the wait; `CancellationError`.
    @discardableResult
    nonisolated(nonsending) public func waitForReadiness(
        of descriptor: CInt,
        watching events: FileDescriptorSource.Events,
        in mode: Mode = .default
    ) async throws -> FileDescriptorSource.Events {
        try await LoopWaiter<FileDescriptorSource.Events>.wait { waiter in
            let dropped = DropSignal(armed: false) { [self] in
                waiter.finish(.failure(lostSourceError(descriptor: descriptor)))
            }
            let source: FileDescriptorSource
            do {
                source = try FileDescriptorSource(descriptor: descriptor, events: events) { [self] _, seen in
                    dropped.keepAlive()
                    if seen.contains(.invalid) {
                        waiter.finish(.failure(lostSourceError(descriptor: descriptor)))
                    } else {
                        waiter.finish(.success(seen))
                    }
                }
            } catch {
                waiter.finish(.failure(error))
                return
            }
            dropped.arm()
            addWaitSource(source, to: mode) { error in
                if let error {
                    source.invalidate()
                    waiter.finish(.failure(error))
                } else {
                    waiter.setCleanup { [weak source] in source?.invalidate() }
                }
            }
            if isTerminated { waiter.finish(.failure(Loop.terminatedError)) }
        }
    }

    /// Why the loop let go of a descriptor source an async wait was using before it reported anything.
    func lostSourceError(descriptor: CInt) -> LoopError {
        if isTerminated { return Loop.terminatedError }
        return LoopError(
            .invalidated,
            message: "the loop gave up watching descriptor \(descriptor): it was closed during the wait"
        )
    }
}
