import RunLoopKitSystem
import Synchronization

// MARK: package seam (RunLoopKitServices' async child-exit wait; see Core/Loop+PackageSeam.swift)

/// One suspended task waiting for one thing a loop will do (run a block, fire a timer, report a descriptor): the
/// state machine that resumes its continuation exactly once, whichever comes first of the event, the task's
/// cancellation, a failure and the loop letting go of its item.
///
/// Threading: every method is safe from any thread. The state is guarded by a ``Locked`` (a pthread mutex, so
/// ThreadSanitizer sees it; see Locked.swift for why not `Synchronization.Mutex`); the continuation is resumed and
/// the cleanup runs after the lock is released, so neither can re-enter it.
package final class LoopWaiter<Value: Sendable>: Sendable {
    private enum State {
        /// Created; the continuation is not installed yet.
        case notStarted
        /// The task was cancelled before the continuation was installed.
        case cancelledBeforeStart
        /// Suspended; `cleanup` takes the waiter's item out of the loop once set.
        case waiting(CheckedContinuation<Value, any Error>, cleanup: (@Sendable () -> Void)?)
        /// The work was claimed by the loop and is running; cancellation can no longer stop it.
        case running(CheckedContinuation<Value, any Error>)
        /// Resumed; everything later is ignored.
        case finished
    }

    private let state = Locked<State>(.notStarted)

    /// Suspends the calling task until `setUp`'s event (or a failure, or cancellation) resumes it.
    ///
    /// A task cancelled before the call throws `CancellationError` without calling `setUp`. `setUp` runs once,
    /// synchronously, with the continuation installed: it puts the item in the loop, calls ``setCleanup(_:)``
    /// after adding it, and reports errors with ``finish(_:)``.
    nonisolated(nonsending) package static func wait(_ setUp: (LoopWaiter<Value>) -> Void) async throws -> Value {
        try Task.checkCancellation()
        let waiter = LoopWaiter<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard waiter.start(continuation) else { return }
                setUp(waiter)
            }
        } onCancel: {
            waiter.cancel()
        }
    }

    /// Installs the continuation; if the task was cancelled meanwhile, resumes it with `CancellationError` and
    /// answers false (the caller must not touch the loop then).
    private func start(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        let started = state.withLock { state -> Bool in
            guard case .notStarted = state else {
                state = .finished
                return false
            }
            state = .waiting(continuation, cleanup: nil)
            return true
        }
        if !started { continuation.resume(throwing: CancellationError()) }
        return started
    }

    /// Records how to take the waiter's item out of the loop. Call it once the item was added (never while the
    /// add may still be in progress, so removal never races the add). If the waiter already finished, runs
    /// `cleanup` at once.
    package func setCleanup(_ cleanup: @escaping @Sendable () -> Void) {
        let alreadyFinished = state.withLock { state -> Bool in
            guard case .waiting(let continuation, .none) = state else { return true }
            state = .waiting(continuation, cleanup: cleanup)
            return false
        }
        if alreadyFinished { cleanup() }
    }

    /// Claims the work for the loop: from now on cancellation waits for its result. Answers false if the waiter
    /// already finished (cancelled, say): the work must then be skipped.
    package func claim() -> Bool {
        state.withLock { state in
            guard case .waiting(let continuation, _) = state else { return false }
            state = .running(continuation)
            return true
        }
    }

    /// Resumes the task with `result` unless it was resumed already; runs the cleanup first. Any thread.
    package func finish(_ result: Result<Value, any Error>) {
        let (continuation, cleanup) = state.withLock {
            state -> (CheckedContinuation<Value, any Error>?, (@Sendable () -> Void)?) in
            switch state {
            case .waiting(let continuation, let cleanup):
                state = .finished
                return (continuation, cleanup)
            case .running(let continuation):
                state = .finished
                return (continuation, nil)
            case .notStarted, .cancelledBeforeStart, .finished:
                return (nil, nil)
            }
        }
        cleanup?()
        continuation?.resume(with: result)
    }

    /// The task was cancelled: resumes it with `CancellationError` unless its work is already running or it
    /// finished. Any thread.
    private func cancel() {
        let (continuation, cleanup) = state.withLock {
            state -> (CheckedContinuation<Value, any Error>?, (@Sendable () -> Void)?) in
            switch state {
            case .notStarted:
                state = .cancelledBeforeStart
                return (nil, nil)
            case .waiting(let continuation, let cleanup):
                state = .finished
                return (continuation, cleanup)
            case .cancelledBeforeStart, .running, .finished:
                return (nil, nil)
            }
        }
        cleanup?()
        continuation?.resume(throwing: CancellationError())
    }
}

extension LoopWaiter {
    /// Waits for an item's handler: `make` makes the item, whose handler finishes `waiter` and captures `dropped`
    /// (call its `keepAlive()`); the item is added to `mode` of `loop`, invalidated when the wait ends otherwise
    /// (cancelled), and the wait throws ``LoopError/Code/loopTerminated`` if the loop's thread exits first (the loop
    /// then releases the item, and `dropped` with it). What `make` and the add throw, the wait throws. Any thread.
    ///
    /// The shape of every wait on one item: ``LoopClock``'s sleeps and RunLoopKitServices' `waitForExit`.
    nonisolated(nonsending) package static func waitForItem<Item: LoopItem>(
        on loop: Loop,
        in mode: Loop.Mode,
        _ make: (_ waiter: LoopWaiter<Value>, _ dropped: DropSignal) throws -> Item
    ) async throws -> Value {
        try await wait { waiter in
            let dropped = DropSignal(armed: false) { waiter.finish(.failure(Loop.terminatedError)) }
            let item: Item
            do {
                item = try make(waiter, dropped)
            } catch {
                waiter.finish(.failure(error))
                return
            }
            dropped.arm()
            do {
                try loop.add(item, to: mode)
            } catch {
                item.invalidate()
                waiter.finish(.failure(error))
                return
            }
            waiter.setCleanup { [weak item] in item?.invalidate() }  // Weak: the loop's release must free it.
            if loop.isTerminated { waiter.finish(.failure(Loop.terminatedError)) }
        }
    }
}

/// Calls a closure when the last reference to it goes away: captured by a block or an item handler, it tells a
/// waiter that the loop dropped the block or released the item without ever calling it (the loop's thread
/// exited, or the item was invalidated by the loop).
///
/// Threading: the closure runs on whichever thread releases the last reference; it must not take a lock that
/// thread may hold.
package final class DropSignal: Sendable {
    private let onDrop: @Sendable () -> Void
    private let armed: Atomic<Bool>

    /// A signal that calls `onDrop` when released; an unarmed one only after ``arm()`` (so a handler released
    /// because creating its item failed reports nothing).
    init(armed: Bool = true, _ onDrop: @escaping @Sendable () -> Void) {
        self.onDrop = onDrop
        self.armed = Atomic(armed)
    }

    /// From now on, releasing the signal calls its closure.
    func arm() {
        armed.store(true, ordering: .releasing)
    }

    /// Keeps the signal alive as long as the closure that calls this; does nothing else.
    @inline(__always)
    package func keepAlive() {}

    deinit {
        if armed.load(ordering: .acquiring) { onDrop() }
    }
}
