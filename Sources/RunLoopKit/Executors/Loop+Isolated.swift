import RunLoopKitSystem

extension Loop {
    /// A loop as seen from its own thread: the one way to give an item a handler that is not `@Sendable`, so that it
    /// may touch what the calling code is isolated to (the main actor's state on ``Loop/main``, an actor's state on
    /// the loop that is its executor) or capture state that is not `Sendable`, with no `assumeIsolated` and no lock.
    /// Made by ``Loop/assumeIsolated(isolation:)`` (SwiftNIO's `NIOIsolatedEventLoop` is the model).
    ///
    /// Each handler made through the view runs on the loop's thread, where the view was made, and its item is bound to
    /// this loop from birth and pinned to it: adding it to another loop throws ``LoopError/Code/ownedByAnotherLoop``,
    /// even once this loop's thread has exited. The items are ordinary otherwise: add them to modes, change and
    /// invalidate them from any thread, as usual.
    ///
    /// ```swift
    /// @MainActor final class Clock {
    ///     var ticks = 0
    ///     func start() throws {
    ///         let view = Loop.main.assumeIsolated()          // on the main thread, isolated to the main actor
    ///         let timer = try view.makeTimer(at: .now, repeating: .seconds(1)) { _ in self.ticks += 1 }
    ///         try Loop.main.add(timer)
    ///     }
    /// }
    /// ```
    ///
    /// Threading: not `Sendable`; use it on the loop's thread, in the isolation it was made in.
    public struct Isolated {
        /// The loop the view is of. Package seam: RunLoopKitServices' `make…` methods (see Loop+PackageSeam.swift).
        package let loop: Loop

        /// Makes a custom source whose handlers (see ``LoopSource/init(order:schedule:cancel:perform:file:line:)``) run on the
        /// loop's thread in the caller's isolation.
        public func makeSource(
            order: Int = 0,
            schedule: ((Loop, Loop.Mode) -> Void)? = nil,
            cancel: ((Loop, Loop.Mode) -> Void)? = nil,
            perform: @escaping (LoopSource) -> Void
        ) -> LoopSource {
            pinned(
                LoopSource(
                    order: order,
                    schedule: schedule.map { unsafeBitCast($0, to: (@Sendable (Loop, Loop.Mode) -> Void).self) },
                    cancel: cancel.map { unsafeBitCast($0, to: (@Sendable (Loop, Loop.Mode) -> Void).self) },
                    perform: unsafeBitCast(perform, to: (@Sendable (LoopSource) -> Void).self)))
        }

        /// Makes a timer (see ``LoopTimer/init(at:repeating:tolerance:order:handler:file:line:)``) whose handler runs on the
        /// loop's thread in the caller's isolation.
        /// - Throws: What ``LoopTimer/init(at:repeating:tolerance:order:handler:file:line:)`` throws.
        public func makeTimer(
            at fireTime: Loop.Instant,
            repeating interval: Duration? = nil,
            tolerance: Duration? = nil,
            order: Int = 0,
            handler: @escaping (LoopTimer) -> Void
        ) throws(LoopError) -> LoopTimer {
            pinned(
                try LoopTimer(
                    at: fireTime, repeating: interval, tolerance: tolerance, order: order,
                    handler: unsafeBitCast(handler, to: (@Sendable (LoopTimer) -> Void).self)))
        }

        /// Makes a timer that first fires `delay` from now (see
        /// ``LoopTimer/init(after:repeating:tolerance:order:handler:file:line:)``), whose handler runs on the loop's thread in
        /// the caller's isolation.
        /// - Throws: What ``LoopTimer/init(at:repeating:tolerance:order:handler:file:line:)`` throws.
        public func makeTimer(
            after delay: Duration,
            repeating interval: Duration? = nil,
            tolerance: Duration? = nil,
            order: Int = 0,
            handler: @escaping (LoopTimer) -> Void
        ) throws(LoopError) -> LoopTimer {
            try makeTimer(
                at: loop.now + delay, repeating: interval, tolerance: tolerance, order: order, handler: handler)
        }

        /// Makes a descriptor source (see ``FileDescriptorSource/init(descriptor:events:order:handler:file:line:)``) whose
        /// handler runs on the loop's thread in the caller's isolation.
        /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
        public func makeDescriptorSource(
            descriptor: CInt,
            events: DescriptorBackedSource.Events = .readable,
            order: Int = 0,
            handler: @escaping (FileDescriptorSource, DescriptorBackedSource.Events) -> Void
        ) throws(LoopError) -> FileDescriptorSource {
            pinned(
                try FileDescriptorSource(
                    descriptor: descriptor, events: events, order: order,
                    handler: unsafeBitCast(
                        handler, to: (@Sendable (FileDescriptorSource, DescriptorBackedSource.Events) -> Void).self)))
        }

        /// Makes an observer (see ``LoopObserver/init(activities:repeats:order:handler:file:line:)``) whose handler runs on the
        /// loop's thread in the caller's isolation.
        public func makeObserver(
            activities: Loop.Activity,
            repeats: Bool = true,
            order: Int = 0,
            handler: @escaping (LoopObserver, Loop.Activity) -> Void
        ) -> LoopObserver {
            pinned(
                LoopObserver(
                    activities: activities, repeats: repeats, order: order,
                    handler: unsafeBitCast(handler, to: (@Sendable (LoopObserver, Loop.Activity) -> Void).self)))
        }

        /// Schedules a one-shot callback (see ``Loop/schedule(at:tolerance:in:_:file:line:)``) that runs on the
        /// loop's thread in the caller's isolation.
        /// - Throws: What ``Loop/schedule(at:tolerance:in:_:file:line:)`` throws.
        @discardableResult
        public func schedule(
            at fireTime: Loop.Instant,
            tolerance: Duration? = nil,
            in mode: Loop.Mode = .default,
            _ callback: @escaping () -> Void,
            file: StaticString = #fileID,
            line: UInt = #line
        ) throws(LoopError) -> ScheduledCallback {
            try loop.schedule(
                at: fireTime, tolerance: tolerance, in: mode, unsafeBitCast(callback, to: (@Sendable () -> Void).self),
                file: file, line: line)
        }

        /// Schedules a one-shot callback `delay` from now (see ``Loop/schedule(after:tolerance:in:_:file:line:)``)
        /// that runs on the loop's thread in the caller's isolation.
        /// - Throws: What ``Loop/schedule(at:tolerance:in:_:file:line:)`` throws.
        @discardableResult
        public func schedule(
            after delay: Duration,
            tolerance: Duration? = nil,
            in mode: Loop.Mode = .default,
            _ callback: @escaping () -> Void,
            file: StaticString = #fileID,
            line: UInt = #line
        ) throws(LoopError) -> ScheduledCallback {
            try schedule(at: loop.now + delay, tolerance: tolerance, in: mode, callback, file: file, line: line)
        }

        /// Queues `block` to run once on the loop's thread, in the caller's isolation, at the next block point of a
        /// pass in `mode` (see ``Loop/perform(in:_:file:line:)-(Mode,_,_,_)``).
        /// - Returns: `false` if the loop is ``Loop/isTerminated``, so the block will never run.
        @discardableResult
        public func perform(
            in mode: Loop.Mode = .default,
            _ block: @escaping () -> Void,
            file: StaticString = #fileID,
            line: UInt = #line
        ) -> Bool {
            loop.perform(in: mode, unsafeBitCast(block, to: (@Sendable () -> Void).self), file: file, line: line)
        }

        /// Queues `block` to run once on the loop's thread, in the caller's isolation, at the next block point of a
        /// pass in any of `modes` (see ``Loop/perform(in:_:file:line:)-([Mode],_,_,_)``).
        /// - Returns: `false` if `modes` is empty or the loop is ``Loop/isTerminated``, so the block will never run.
        @discardableResult
        public func perform(
            in modes: [Loop.Mode],
            _ block: @escaping () -> Void,
            file: StaticString = #fileID,
            line: UInt = #line
        ) -> Bool {
            loop.perform(in: modes, unsafeBitCast(block, to: (@Sendable () -> Void).self), file: file, line: line)
        }
    }

    /// The loop as seen from its own thread, in the caller's isolation: makes items and callbacks whose handlers are
    /// not `@Sendable` (see ``Isolated``). The loop's thread only.
    ///
    /// The caller's isolation is where the handlers will run, so it must be what the loop's thread runs: none (plain
    /// code on the loop's thread), the main actor on ``Loop/main`` while it serves the main queue, or an actor whose
    /// executor is this loop (or a ``LoopExecutor`` of it). Anything else traps, as `assumeIsolated` does, with a
    /// message naming the mismatch: called on another thread, or isolated to an actor that runs elsewhere (a default
    /// actor whose job happens to run here under a task executor preference, say).
    /// - Parameter isolation: The caller's isolation; leave the default.
    public func assumeIsolated(isolation: isolated (any Actor)? = #isolation) -> Isolated {
        preconditionOnLoopThread()
        if let isolation, let problem = isolationMismatch(isolation) {
            trap("RunLoopKit: Loop.assumeIsolated() called on \(loopDescriptionForTraps) " + problem)
        }
        return Isolated(loop: self)
    }

    /// Why code isolated to `actor` must not run in this loop's callouts, or `nil` when it may: the main actor on
    /// ``main`` while it serves the main queue, any other actor when its executor is this loop or a ``LoopExecutor``
    /// of it.
    private func isolationMismatch(_ actor: any Actor) -> String? {
        if actor === MainActor.shared {
            return isMain && servesMainQueue
                ? nil
                : "from the main actor: main-actor handlers run on Loop.main only "
                    + "(while it serves the main queue)"
        }
        let executor = actor.unownedExecutor.asSerialExecutor()
        if let executorLoop = executor as? Loop, executorLoop === self { return nil }
        if let loopExecutor = executor as? LoopExecutor, loopExecutor.loop === self { return nil }
        return "from an actor whose executor is not this loop: its handlers could run while the actor runs elsewhere"
    }
}

@available(*, unavailable)
extension Loop.Isolated: Sendable {}
