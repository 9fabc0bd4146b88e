/// Items whose handlers are isolated to an actor, so they touch the actor's state directly, with no
/// `assumeIsolated` in user code and no hop:
/// - `@MainActor` handlers, for items of ``Loop/main`` (write the closure as `{ @MainActor timer in … }`, or use the
///   `mainActor…:` label);
/// - handlers isolated to an actor whose executor is a loop (`isolatedTo: actor`), handed the actor as an
///   `isolated` parameter.
///
/// The isolation is checked once, when the item is added to a loop: a loop whose thread is not the actor's throws
/// ``LoopError/Code/isolationMismatch``, and the item stays free for the right loop. Each call then runs on the
/// actor's thread by construction; the runtime's own isolation check (`assumeIsolated`) still guards it, and traps
/// with the runtime's message if the actor's executor were changed behind the loop's back.
///
/// Threading: the initialisers are safe from any thread, like the plain ones.
extension LoopTimer {
    /// Creates a timer whose handler runs on the main actor; add it to ``Loop/main`` only. See
    /// ``init(at:repeating:tolerance:order:handler:)`` for the other parameters and errors.
    public convenience init(
        at fireTime: Loop.Instant,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        order: Int = 0,
        mainActorHandler handler: @escaping @MainActor (LoopTimer) -> Void
    ) throws(LoopError) {
        try self.init(at: fireTime, repeating: interval, tolerance: tolerance, order: order) { timer in
            MainActor.assumeIsolated { handler(timer) }
        }
        handlerIsolation = MainActor.shared
    }

    /// Creates a timer that first fires `delay` from now, whose handler runs on the main actor; add it to
    /// ``Loop/main`` only.
    public convenience init(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        order: Int = 0,
        mainActorHandler handler: @escaping @MainActor (LoopTimer) -> Void
    ) throws(LoopError) {
        try self.init(
            at: .now + delay, repeating: interval, tolerance: tolerance, order: order, mainActorHandler: handler)
    }

    /// Creates a timer whose handler is isolated to `actor`; add it to the loop that is the actor's executor.
    public convenience init<Isolation: Actor>(
        at fireTime: Loop.Instant,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        order: Int = 0,
        isolatedTo actor: Isolation,
        handler: @escaping @Sendable (isolated Isolation, LoopTimer) -> Void
    ) throws(LoopError) {
        try self.init(at: fireTime, repeating: interval, tolerance: tolerance, order: order) { timer in
            actor.assumeIsolated { handler($0, timer) }
        }
        handlerIsolation = actor
    }

    /// Creates a timer that first fires `delay` from now, whose handler is isolated to `actor`; add it to the loop
    /// that is the actor's executor.
    public convenience init<Isolation: Actor>(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        order: Int = 0,
        isolatedTo actor: Isolation,
        handler: @escaping @Sendable (isolated Isolation, LoopTimer) -> Void
    ) throws(LoopError) {
        try self.init(
            at: .now + delay, repeating: interval, tolerance: tolerance, order: order, isolatedTo: actor,
            handler: handler)
    }
}

extension LoopSource {
    /// Creates a source whose perform handler runs on the main actor; add it to ``Loop/main`` only. Signal it from
    /// any thread, as usual.
    public convenience init(
        order: Int = 0,
        schedule: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        cancel: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        mainActorPerform perform: @escaping @MainActor () -> Void
    ) {
        self.init(order: order, schedule: schedule, cancel: cancel) { (_: LoopSource) in
            MainActor.assumeIsolated { perform() }
        }
        handlerIsolation = MainActor.shared
    }

    /// Creates a source whose perform handler, handed the source, runs on the main actor; add it to ``Loop/main``
    /// only.
    public convenience init(
        order: Int = 0,
        schedule: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        cancel: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        mainActorPerform perform: @escaping @MainActor (LoopSource) -> Void
    ) {
        self.init(order: order, schedule: schedule, cancel: cancel) { (source: LoopSource) in
            MainActor.assumeIsolated { perform(source) }
        }
        handlerIsolation = MainActor.shared
    }

    /// Creates a source whose perform handler is isolated to `actor`; add it to the loop that is the actor's
    /// executor.
    public convenience init<Isolation: Actor>(
        order: Int = 0,
        schedule: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        cancel: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
        isolatedTo actor: Isolation,
        perform: @escaping @Sendable (isolated Isolation, LoopSource) -> Void
    ) {
        self.init(order: order, schedule: schedule, cancel: cancel) { (source: LoopSource) in
            actor.assumeIsolated { perform($0, source) }
        }
        handlerIsolation = actor
    }
}

extension FileDescriptorSource {
    /// Creates a source watching `descriptor` whose handler runs on the main actor; add it to ``Loop/main`` only.
    /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
    public convenience init(
        descriptor: CInt,
        events: Events = .readable,
        order: Int = 0,
        mainActorHandler handler: @escaping @MainActor (Events) -> Void
    ) throws(LoopError) {
        try self.init(descriptor: descriptor, events: events, order: order) { (_: FileDescriptorSource, ready) in
            MainActor.assumeIsolated { handler(ready) }
        }
        handlerIsolation = MainActor.shared
    }

    /// Creates a source watching `descriptor` whose handler, handed the source, runs on the main actor; add it to
    /// ``Loop/main`` only.
    /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
    public convenience init(
        descriptor: CInt,
        events: Events = .readable,
        order: Int = 0,
        mainActorHandler handler: @escaping @MainActor (FileDescriptorSource, Events) -> Void
    ) throws(LoopError) {
        try self.init(descriptor: descriptor, events: events, order: order) { (source: FileDescriptorSource, ready) in
            MainActor.assumeIsolated { handler(source, ready) }
        }
        handlerIsolation = MainActor.shared
    }

    /// Creates a source watching `descriptor` whose handler is isolated to `actor`; add it to the loop that is the
    /// actor's executor.
    /// - Throws: ``LoopError/Code/badDescriptor`` when `descriptor` is not open.
    public convenience init<Isolation: Actor>(
        descriptor: CInt,
        events: Events = .readable,
        order: Int = 0,
        isolatedTo actor: Isolation,
        handler: @escaping @Sendable (isolated Isolation, FileDescriptorSource, Events) -> Void
    ) throws(LoopError) {
        try self.init(descriptor: descriptor, events: events, order: order) { (source: FileDescriptorSource, ready) in
            actor.assumeIsolated { handler($0, source, ready) }
        }
        handlerIsolation = actor
    }
}

extension LoopObserver {
    /// Creates an observer whose handler runs on the main actor; add it to ``Loop/main`` only.
    public convenience init(
        activities: Loop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        mainActorHandler handler: @escaping @MainActor (Loop.Activity) -> Void
    ) {
        self.init(activities: activities, repeats: repeats, order: order) { (_: LoopObserver, activity) in
            MainActor.assumeIsolated { handler(activity) }
        }
        handlerIsolation = MainActor.shared
    }

    /// Creates an observer whose handler, handed the observer, runs on the main actor; add it to ``Loop/main``
    /// only.
    public convenience init(
        activities: Loop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        mainActorHandler handler: @escaping @MainActor (LoopObserver, Loop.Activity) -> Void
    ) {
        self.init(activities: activities, repeats: repeats, order: order) { (observer: LoopObserver, activity) in
            MainActor.assumeIsolated { handler(observer, activity) }
        }
        handlerIsolation = MainActor.shared
    }

    /// Creates an observer whose handler is isolated to `actor`; add it to the loop that is the actor's executor.
    public convenience init<Isolation: Actor>(
        activities: Loop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        isolatedTo actor: Isolation,
        handler: @escaping @Sendable (isolated Isolation, LoopObserver, Loop.Activity) -> Void
    ) {
        self.init(activities: activities, repeats: repeats, order: order) { (observer: LoopObserver, activity) in
            actor.assumeIsolated { handler($0, observer, activity) }
        }
        handlerIsolation = actor
    }
}

extension Loop {
    /// Schedules a one-shot callback on the main actor (see ``schedule(at:tolerance:in:_:)``); ``main`` only.
    /// - Throws: ``LoopError/Code/isolationMismatch`` on any other loop, and what the plain form throws.
    @discardableResult
    public func schedule(
        at fireTime: Instant,
        tolerance: Duration = .zero,
        in mode: Mode = .default,
        mainActorCallback callback: @escaping @MainActor () -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try requireIsolation(to: MainActor.shared)
        return try schedule(at: fireTime, tolerance: tolerance, in: mode) { MainActor.assumeIsolated { callback() } }
    }

    /// Schedules a one-shot callback on the main actor `delay` from now (see ``schedule(after:tolerance:in:_:)``);
    /// ``main`` only.
    @discardableResult
    public func schedule(
        after delay: Duration,
        tolerance: Duration = .zero,
        in mode: Mode = .default,
        mainActorCallback callback: @escaping @MainActor () -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try schedule(at: .now + delay, tolerance: tolerance, in: mode, mainActorCallback: callback)
    }

    /// Schedules a one-shot callback isolated to `actor`, whose executor must be this loop (see
    /// ``schedule(at:tolerance:in:_:)``).
    /// - Throws: ``LoopError/Code/isolationMismatch`` when this loop is not the actor's executor, and what the
    ///   plain form throws.
    @discardableResult
    public func schedule<Isolation: Actor>(
        at fireTime: Instant,
        tolerance: Duration = .zero,
        in mode: Mode = .default,
        isolatedTo actor: Isolation,
        _ callback: @escaping @Sendable (isolated Isolation) -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try requireIsolation(to: actor)
        return try schedule(at: fireTime, tolerance: tolerance, in: mode) { actor.assumeIsolated { callback($0) } }
    }

    /// Schedules a one-shot callback isolated to `actor` `delay` from now; this loop must be the actor's executor.
    @discardableResult
    public func schedule<Isolation: Actor>(
        after delay: Duration,
        tolerance: Duration = .zero,
        in mode: Mode = .default,
        isolatedTo actor: Isolation,
        _ callback: @escaping @Sendable (isolated Isolation) -> Void
    ) throws(LoopError) -> ScheduledCallback {
        try schedule(at: .now + delay, tolerance: tolerance, in: mode, isolatedTo: actor, callback)
    }
}
