import RunLoopKitSystem

/// The engine of one ``DescriptorReadiness`` iteration: a descriptor source that is in its mode only while a
/// `next()` waits, and the state machine that resumes each `next()` exactly once.
///
/// States: `idle` (no `next()` pending; the source, if any, is out of its mode), `waiting` (one `next()` pending,
/// the source in its mode or being added), `ended` (for good; an error not yet thrown is kept for the next call).
/// The source is referenced weakly: the loop holds it while it is registered, and when the loop lets go of it
/// (thread exit, or the loop invalidated it) a ``DropSignal`` in its handler ends the iteration.
///
/// Threading: safe from any thread. The state is guarded by a ``Locked``; continuations are resumed, and the
/// source is removed or invalidated, after the lock is released. The handler runs on the loop's thread.
final class ReadinessWatch: Sendable {
    typealias Events = FileDescriptorSource.Events

    private enum Phase {
        case idle
        case waiting(CheckedContinuation<Events?, any Error>)
        case ended(pending: (any Error)?)
    }

    private struct State {
        var phase = Phase.idle
        weak var source: FileDescriptorSource?
        /// A source was created: if ``source`` is nil now, the loop let go of it (its ``DropSignal`` is about to
        /// end the iteration), and no new one must be made in its place.
        var createdSource = false
        /// An `add` of the source is in progress; invalidating it now could race the registration, so ``end(_:)``
        /// leaves that to the adder.
        var adding = false
    }

    let loop: Loop
    let descriptor: CInt
    let events: Events
    let mode: Loop.Mode
    private let state = Locked(State())

    init(loop: Loop, descriptor: CInt, events: Events, mode: Loop.Mode) {
        self.loop = loop
        self.descriptor = descriptor
        self.events = events
        self.mode = mode
    }

    deinit {
        // The iterator went away: stop watching. (Loaded under the lock, released outside it.)
        let source = state.withLock { $0.source }
        source?.invalidate()
    }

    /// The next report, `nil` once ended. Any task; one call at a time.
    func next() async throws -> Events? {
        if Task.isCancelled { end(CancellationError()) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                demand(continuation)
            }
        } onCancel: {
            end(CancellationError())
        }
    }

    private enum Step {
        case resume(Result<Events?, any Error>)
        case add(FileDescriptorSource?)
    }

    private func demand(_ continuation: CheckedContinuation<Events?, any Error>) {
        let step = state.withLock { state -> Step in
            switch state.phase {
            case .ended(let pending):
                state.phase = .ended(pending: nil)
                return .resume(pending.map { .failure($0) } ?? .success(nil))
            case .waiting:
                trap(
                    "RunLoopKit: DescriptorReadiness.Iterator.next() called while another next() is pending")
            case .idle:
                let source = state.source
                if source == nil && state.createdSource {
                    state.phase = .ended(pending: nil)
                    return .resume(.failure(loop.lostSourceError(descriptor: descriptor)))
                }
                state.phase = .waiting(continuation)
                state.adding = true
                return .add(source)
            }
        }
        switch step {
        case .resume(let result):
            continuation.resume(with: result)
        case .add(let existing):
            let source: FileDescriptorSource
            do {
                source = try existing ?? makeSource()
            } catch {
                addFinished()
                end(error)
                return
            }
            loop.addWaitSource(source, to: mode) { [self] error in
                addFinished()
                if let error { end(error) }
            }
            if loop.isTerminated { end(Loop.terminatedError) }
        }
    }

    /// Creates the iteration's source and records it (weakly).
    private func makeSource() throws -> FileDescriptorSource {
        let dropped = DropSignal(armed: false) { [weak self] in
            guard let self else { return }
            end(loop.lostSourceError(descriptor: descriptor))
        }
        let source = try FileDescriptorSource(descriptor: descriptor, events: events) { [weak self] _, seen in
            dropped.keepAlive()
            guard let self else { return }
            if seen.contains(.invalid) {
                end(loop.lostSourceError(descriptor: descriptor))
            } else {
                deliver(seen)
            }
        }
        dropped.arm()
        state.withLock { state in
            state.source = source
            state.createdSource = true
        }
        return source
    }

    /// The add returned: if the iteration ended meanwhile, the source is invalidated now.
    private func addFinished() {
        let (ended, source) = state.withLock { state -> (Bool, FileDescriptorSource?) in
            state.adding = false
            if case .ended = state.phase { return (true, state.source) }
            return (false, nil)
        }
        if ended { source?.invalidate() }
    }

    /// The source's handler, on the loop's thread: hands the report to the waiting `next()` and takes the source
    /// out of its mode until the next demand (a report nobody waits for is dropped: the level-triggered
    /// descriptor is reported again once it is watched again).
    private func deliver(_ seen: Events) {
        let (continuation, source, ended) = state.withLock {
            state -> (CheckedContinuation<Events?, any Error>?, FileDescriptorSource?, Bool) in
            switch state.phase {
            case .waiting(let continuation):
                state.phase = .idle
                return (continuation, state.source, false)
            case .idle:
                return (nil, state.source, false)
            case .ended:
                return (nil, state.source, true)
            }
        }
        if ended {
            source?.invalidate()
        } else if let source {
            loop.remove(source, from: mode)
        }
        continuation?.resume(returning: seen)
    }

    /// Ends the iteration for good: a pending `next()` throws `error` (`nil`: answers `nil`); without one, the
    /// next call throws it. The first end wins. Invalidates the source unless an add is in progress.
    private func end(_ error: (any Error)?) {
        let (continuation, source) = state.withLock {
            state -> (CheckedContinuation<Events?, any Error>?, FileDescriptorSource?) in
            var continuation: CheckedContinuation<Events?, any Error>?
            switch state.phase {
            case .ended:
                return (nil, nil)
            case .waiting(let pending):
                continuation = pending
                state.phase = .ended(pending: nil)
            case .idle:
                state.phase = .ended(pending: error)
            }
            return (continuation, state.adding ? nil : state.source)
        }
        source?.invalidate()
        if let continuation {
            if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: nil) }
        }
    }
}
