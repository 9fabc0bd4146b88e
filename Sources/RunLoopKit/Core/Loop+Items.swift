import Glibc

extension Loop {
    // MARK: Public membership API

    /// Adds a custom source to `mode` (or to every common mode, for ``Mode/common``). Safe from any thread.
    ///
    /// The source's schedule handler runs on the loop's thread once per mode it newly joins; adding it to a mode
    /// it is already in does nothing. From another thread the source joins before the loop's next pass.
    /// - Throws: ``LoopError/Code/invalidated``, ``LoopError/Code/ownedByAnotherLoop``,
    ///   ``LoopError/Code/loopTerminated``.
    public func add(_ source: LoopSource, to mode: Mode = .default) throws(LoopError) {
        try add(.source(source), to: mode)
    }

    /// Adds a timer to `mode` (or to every common mode). Safe from any thread.
    ///
    /// The timer is scheduled for its ``LoopTimer/nextFireTime``; from another thread the loop is woken so the
    /// timer fires on time.
    /// - Throws: ``LoopError/Code/invalidated``, ``LoopError/Code/ownedByAnotherLoop``,
    ///   ``LoopError/Code/loopTerminated``.
    public func add(_ timer: LoopTimer, to mode: Mode = .default) throws(LoopError) {
        try add(.timer(timer), to: mode)
    }

    /// Adds an observer to `mode` (or to every common mode). Safe from any thread.
    ///
    /// - Throws: ``LoopError/Code/invalidated``, ``LoopError/Code/ownedByAnotherLoop``,
    ///   ``LoopError/Code/loopTerminated``.
    public func add(_ observer: LoopObserver, to mode: Mode = .default) throws(LoopError) {
        try add(.observer(observer), to: mode)
    }

    /// Adds a descriptor source to `mode` (or to every common mode). Safe from any thread.
    ///
    /// The first add puts the descriptor in the loop's epoll set, on the calling thread, so a bad descriptor is
    /// reported here and now.
    /// - Throws: ``LoopError/Code/badDescriptor`` (closed or invalid descriptor),
    ///   ``LoopError/Code/descriptorAlreadyRegistered`` (another source of this loop watches it),
    ///   ``LoopError/Code/descriptorNotPollable`` (e.g. a regular file), ``LoopError/Code/invalidated``,
    ///   ``LoopError/Code/ownedByAnotherLoop``, ``LoopError/Code/loopTerminated``.
    public func add(_ source: FileDescriptorSource, to mode: Mode = .default) throws(LoopError) {
        try add(.descriptor(source), to: mode)
    }

    /// Removes a custom source from `mode` (or from the common modes), calling its cancel handler on the loop's
    /// thread. Safe from any thread; removing what is not there does nothing.
    public func remove(_ source: LoopSource, from mode: Mode = .default) {
        remove(.source(source), from: mode)
    }

    /// Removes a timer from `mode` (or from the common modes). Safe from any thread; removing what is not there
    /// does nothing. A timer removed from all its modes stops firing but stays valid and can be added again.
    public func remove(_ timer: LoopTimer, from mode: Mode = .default) {
        remove(.timer(timer), from: mode)
    }

    /// Removes an observer from `mode` (or from the common modes). Safe from any thread.
    public func remove(_ observer: LoopObserver, from mode: Mode = .default) {
        remove(.observer(observer), from: mode)
    }

    /// Removes a descriptor source from `mode` (or from the common modes). Safe from any thread.
    ///
    /// The descriptor stays registered until the source is invalidated; invalidate it before closing the descriptor.
    public func remove(_ source: FileDescriptorSource, from mode: Mode = .default) {
        remove(.descriptor(source), from: mode)
    }

    /// Whether `source` is in `mode` (for ``Mode/common``: whether it was added to the common modes). Safe from any
    /// thread: on the loop's thread the answer includes changes just sent from other threads; from another thread
    /// it is a snapshot of what the loop's thread has applied (a change sent from another thread shows once the
    /// loop applied it, at its next pass), covering the loop's first 64 modes.
    public func contains(_ source: LoopSource, in mode: Mode = .default) -> Bool {
        contains(.source(source), in: mode)
    }

    /// Whether `timer` is in `mode`. Safe from any thread (see ``contains(_:in:)-(LoopSource,_)``).
    public func contains(_ timer: LoopTimer, in mode: Mode = .default) -> Bool {
        contains(.timer(timer), in: mode)
    }

    /// Whether `observer` is in `mode`. Safe from any thread (see ``contains(_:in:)-(LoopSource,_)``).
    public func contains(_ observer: LoopObserver, in mode: Mode = .default) -> Bool {
        contains(.observer(observer), in: mode)
    }

    /// Whether `source` is in `mode`. Safe from any thread (see ``contains(_:in:)-(LoopSource,_)``).
    public func contains(_ source: FileDescriptorSource, in mode: Mode = .default) -> Bool {
        contains(.descriptor(source), in: mode)
    }

    /// Adds `mode` to the loop's common modes, copying every item added to ``Mode/common`` into it.
    /// Safe from any thread. There is no way to remove a common mode (as in CF).
    public func addCommonMode(_ mode: Mode) {
        guard mode != .common else { return }
        onLoopThread { [self] in
            guard modeTable.commonNames.insert(mode).inserted else { return }
            let state = self.mode(named: mode)
            state.isCommon = true
            publishedModes.withLock { _ = $0.common.insert(mode) }
            for item in modeTable.commonItems.values { addToMode(item, state) }
        }
    }

    /// The loop's common modes (initially just ``Mode/default``). Safe from any thread: a consistent snapshot (a
    /// mode added from another thread shows once the loop applied the change, at its next pass).
    public var commonModes: Set<Mode> {
        publishedModes.withLock { $0.common }
    }

    /// Every mode the loop has, in the order they came into being: a mode exists once an item, a block, a run or
    /// ``addCommonMode(_:)`` named it. Safe from any thread: a consistent snapshot (a mode named by an item or
    /// ``addCommonMode(_:)`` from another thread shows once the loop applied the change; one named by a block at
    /// once).
    public var allModes: [Mode] {
        publishedModes.withLock { $0.all }
    }

    // MARK: Shared membership logic

    private func add(_ item: AnyItem, to mode: Mode) throws(LoopError) {
        let base = item.base
        guard base.isValid else {
            throw LoopError(.invalidated, message: "an invalidated item cannot be added to a loop")
        }
        // Checked before binding, so an item offered to a dead loop stays free for a live one.
        guard !isTerminated else {
            throw LoopError(.loopTerminated, message: "the loop's thread has exited")
        }
        guard !createdBeforeFork else {
            throw LoopError(.loopTerminated, message: "the loop was created before fork(); use the child's own loop")
        }
        guard base.bind(to: self) else {
            throw LoopError(.ownedByAnotherLoop, message: "the item already belongs to another loop")
        }
        if case .descriptor(let source) = item, !source.isRegistered.load(ordering: .acquiring) {
            try register(source)
            // Invalidated meanwhile, on another thread, before it saw the registration: take it out here.
            if !source.isValid { removeRegistration(of: source) }
        }
        onLoopThread(with: (UncheckedItem(item), mode)) { loop, change in loop.apply(change.0.item, to: change.1) }
    }

    private func apply(_ item: AnyItem, to mode: Mode) {
        guard item.base.isValid else { return }
        if mode == .common {
            guard modeTable.commonItems.updateValue(item, forKey: item.identity) == nil else { return }
            item.base.isCommon = true
            for name in modeTable.commonNames { addToMode(item, self.mode(named: name)) }
        } else {
            addToMode(item, self.mode(named: mode))
        }
    }

    private func remove(_ item: AnyItem, from mode: Mode) {
        guard item.base.owner === self else { return }
        onLoopThread(with: (UncheckedItem(item), mode)) { loop, change in
            loop.applyRemoval(change.0.item, from: change.1)
        }
    }

    private func applyRemoval(_ item: AnyItem, from mode: Mode) {
        if mode == .common {
            guard modeTable.commonItems.removeValue(forKey: item.identity) != nil else { return }
            item.base.isCommon = false
            for name in modeTable.commonNames {
                if let state = existingMode(named: name) { removeFromMode(item, state) }
            }
        } else if let state = existingMode(named: mode) {
            removeFromMode(item, state)
        }
    }

    private func contains(_ item: AnyItem, in mode: Mode) -> Bool {
        let onLoopThread = isCurrent
        if onLoopThread { applyChanges() }
        guard item.base.owner === self else { return false }
        if mode == .common { return item.base.isCommon }
        if onLoopThread {
            guard let state = existingMode(named: mode) else { return false }
            return item.base.isIn(modeID: state.id)
        }
        guard let id = publishedModes.withLock({ $0.ids[mode] }), id < 64 else { return false }
        return item.base.modeMask.load(ordering: .acquiring) & (1 << UInt64(id)) != 0
    }

    /// Puts `item` in `state`, with what each kind needs on joining. Loop thread only.
    func addToMode(_ item: AnyItem, _ state: ModeState) {
        let base = item.base
        guard base.isValid, !base.isIn(modeID: state.id) else { return }
        // `keepsRunAlive` set before it was added here, or from another thread: count it as asked.
        if base.countsTowardKeepAlive != base.keepsRunAliveRequested.load(ordering: .relaxed) {
            applyKeepsRunAlive(item)
        }
        base.memberships.insert(LoopItem.Membership(modeID: state.id, slot: state.insert(item)))
        base.publishMembership(modeID: state.id, present: true)
        switch item {
        case .source(let source):
            source.scheduleHandler?(self, state.name)
            if source.signalled.load(ordering: .acquiring) { queueSignalled(source) }
        case .timer(let timer):
            if timer.state == .idle {
                schedule(timer)
            } else if timer.state == .parked, state === runStack.mode {
                timerTable.parked.removeAll { $0 === timer }
                schedule(timer)
            }
        case .descriptor(let source):
            if descriptorTable.registered[source.descriptor] !== source {
                replaceRegistration(with: source)
                // ``FileDescriptorSource/events`` changed between the registration and now.
                if source.events != source.registeredEvents { applyWatchedEvents(source) }
            }
            if source.isParked, state === runStack.mode {
                descriptorTable.parked.removeAll { $0 === source }
                unpark(source)
            }
        case .observer:
            break
        }
    }

    /// Takes `item` out of `state`, with what each kind needs on leaving. Loop thread only.
    func removeFromMode(_ item: AnyItem, _ state: ModeState) {
        let base = item.base
        guard let slot = base.memberships.remove(modeID: state.id) else { return }
        base.publishMembership(modeID: state.id, present: false)
        state.remove(item, at: slot)
        switch item {
        case .source(let source):
            source.cancelHandler?(self, state.name)
        case .timer(let timer) where !base.isInAnyMode:
            unschedule(timer)
        default:
            break
        }
    }

    /// Invalidation: removes `item` from every mode and the common items, on the loop's thread. Any thread.
    func detachEverywhere(_ item: AnyItem) {
        onLoopThread(with: UncheckedItem(item)) { loop, item in loop.detachNow(item.item) }
    }

    /// Invalidation's work on the loop's thread (``detachEverywhere(_:)``). Loop thread only.
    func detachNow(_ item: AnyItem) {
        if item.base.isCommon {
            modeTable.commonItems[item.identity] = nil
            item.base.isCommon = false
        }
        // Taken one at a time rather than iterated, so removing does not mutate what is being iterated.
        while let membership = item.base.memberships.any { removeFromMode(item, modeTable.list[membership.modeID]) }
        switch item {
        case .timer(let timer): unschedule(timer)
        case .descriptor(let source): unregister(source)
        case .source, .observer: break
        }
    }

    // MARK: Custom sources

    /// Hands a newly signalled source to this loop: pushed on the lock-free stack, and the loop woken if asleep.
    func enqueueSignalled(_ source: LoopSource) {
        guard !isTerminated else { return }
        signalStack.push(source)
        poller.wakeIfSleeping()
    }

    // MARK: Timers

    /// Puts `timer` in the heap for its current deadline. Loop thread only.
    func schedule(_ timer: LoopTimer) {
        timer.latestFireTime = timer.fireTime.addingSaturating(timer.toleranceNanoseconds)
        timer.sequence = timerTable.takeSequence()
        timerTable.heap.insert(timer)
        timer.state = .scheduled
    }

    /// Takes `timer` out of the heap or the parked list; it stays valid. Loop thread only.
    func unschedule(_ timer: LoopTimer) {
        switch timer.state {
        case .scheduled: timerTable.heap.remove(timer)
        case .parked: timerTable.parked.removeAll { $0 === timer }
        case .idle, .due, .firing: break
        }
        timer.state = .idle
    }

    /// Moves `timer`'s next fire time, on the loop's thread.
    func reschedule(_ timer: LoopTimer, at fireTime: Int64) {
        onLoopThread(with: (timer, fireTime)) { loop, change in
            let (timer, fireTime) = change
            guard timer.isValid else { return }
            loop.unschedule(timer)
            timer.fireTime = fireTime
            if timer.isInAnyMode { loop.schedule(timer) }
        }
    }

    // MARK: Descriptor sources

    /// Puts the source's descriptor in the epoll set, from the calling thread, once per source.
    private func register(_ source: FileDescriptorSource) throws(LoopError) {
        // Closed since the source was made: its number may name another file now, even this loop's own epoll set
        // (created by the `Loop.current` of this very call), which epoll would answer with a puzzling EINVAL.
        guard FileDescriptorCalls.identity(of: source.descriptor) == source.fileIdentity else {
            throw LoopError(
                .badDescriptor, errno: EBADF,
                message: "descriptor \(source.descriptor) was closed after its source was made (the number may name "
                    + "another file now)")
        }
        // Several threads adding the same source at once: the loser of the race sees EEXIST from its own
        // registration only if the winner already registered; treat that as done.
        let events = source.events
        do {
            try poller.register(source.descriptor, events: events.epollEvents, tag: source.epollTag)
        } catch {
            let lostTheRace =
                error.code == .descriptorAlreadyRegistered && source.isRegistered.load(ordering: .acquiring)
            guard lostTheRace else { throw error }
            return
        }
        source.registeredEvents = events
        source.isRegistered.store(true, ordering: .sequentiallyConsistent)
    }

    /// Records `source` as the owner of its descriptor number. An earlier source of the same number lost its
    /// descriptor (closed without invalidating): it is invalidated, and never sees the new descriptor's events.
    private func replaceRegistration(with source: FileDescriptorSource) {
        if let previous = descriptorTable.registered[source.descriptor], previous !== source {
            descriptorTable.registered[source.descriptor] = nil
            previous.isUnregistered.store(true, ordering: .sequentiallyConsistent)  // The kernel dropped it.
            previous.invalidate()
        }
        descriptorTable.registered[source.descriptor] = source
    }

    /// Tells the epoll set what `source` watches now (``FileDescriptorSource/events``), unless its reports are
    /// suspended (parked: resuming uses the new events) or it is not registered here. A descriptor closed meanwhile
    /// invalidates its source, as when unparking. Loop thread only.
    func applyWatchedEvents(_ source: FileDescriptorSource) {
        guard source.isValid, descriptorTable.registered[source.descriptor] === source, !source.isParked else { return }
        let events = source.events
        guard events != source.registeredEvents else { return }
        source.registeredEvents = events
        if !poller.resume(source.descriptor, events: events.epollEvents, tag: source.epollTag) {
            descriptorTable.registered[source.descriptor] = nil
            source.isUnregistered.store(true, ordering: .sequentiallyConsistent)  // Closed: the kernel dropped it.
            source.invalidate()
        }
    }

    /// Forgets the source's registration for good, taking its descriptor out of the epoll set if that was not
    /// done yet. Loop thread only.
    func unregister(_ source: FileDescriptorSource) {
        descriptorTable.parked.removeAll { $0 === source }
        guard descriptorTable.registered[source.descriptor] === source else { return }
        descriptorTable.registered[source.descriptor] = nil
        removeRegistration(of: source)  // A parked descriptor is still in the set, suspended.
        source.isParked = false
    }

    /// Takes the source's descriptor out of the epoll set, once: whichever comes first of the loop's unregister,
    /// `invalidate()` on any thread, or an `add` that finds its source invalidated right after registering it (with
    /// sequentially consistent flags, the registration and the invalidation always see each other). Any thread.
    func removeRegistration(of source: FileDescriptorSource) {
        guard source.isRegistered.load(ordering: .sequentiallyConsistent),
            !source.isUnregistered.exchange(true, ordering: .sequentiallyConsistent)
        else { return }
        poller.unregister(source.descriptor)
    }

    /// Suspends a ready descriptor's reports while none of its modes runs (level-triggered readiness would
    /// otherwise wake the loop again and again). It stays in the epoll set, so that if it is closed meanwhile the
    /// kernel drops it and ``unpark(_:)`` cannot mistake a new file with the same number for it. Loop thread only.
    func park(_ source: FileDescriptorSource) {
        guard !source.isParked else { return }
        poller.suspend(source.descriptor, tag: source.epollTag)
        source.isParked = true
        descriptorTable.parked.append(source)
    }

    /// Resumes a parked descriptor's reports; one that was closed meanwhile (its number perhaps reused) invalidates
    /// its source.
    func unpark(_ source: FileDescriptorSource) {
        source.isParked = false
        source.registeredEvents = source.events
        if !poller.resume(source.descriptor, events: source.registeredEvents.epollEvents, tag: source.epollTag) {
            if descriptorTable.registered[source.descriptor] === source {
                descriptorTable.registered[source.descriptor] = nil
            }
            source.isUnregistered.store(true, ordering: .sequentiallyConsistent)  // Closed: the kernel dropped it.
            source.invalidate()
        }
    }

    // MARK: Thread exit

    /// Called by the registry when the owning thread exits: removes every item, drops blocks, closes descriptors.
    /// Traps if an actor job is still queued (it could never run, and its task would wait forever).
    func tearDownOnThreadExit() {
        applyChanges()
        control.lifecycle.store(.tearingDown, ordering: .releasing)
        closeInbox()
        for (_, item) in modeTable.commonItems { item.base.isCommon = false }
        modeTable.commonItems.removeAll()
        for state in modeTable.list {
            for source in state.sources { removeFromMode(.source(source), state) }
            for timer in state.timers { removeFromMode(.timer(timer), state) }
            for observer in state.observers { removeFromMode(.observer(observer), state) }
            for source in state.descriptorSources { removeFromMode(.descriptor(source), state) }
        }
        for source in descriptorTable.registered.values {
            unregister(source)
            source.forgetRegistration()  // Registered afresh by the loop it joins next, if any.
        }
        descriptorTable.registered.removeAll()
        timerTable.parked.removeAll()
        let callbacks = timerTable.callbacks.removeAll()
        timerTable.remoteCallbacks.removeAll()
        timerTable.commonCallbackCount = 0
        signalStack.popAll { $0.queued = false }
        for source in signalledSources { source.queued = false }  // Still signalled: performed where it goes next.
        signalledSources.removeAll()
        trapOnQueuedJobs()
        blocks.removeAll(pool: inbox.segments)
        poller.close()
        withExtendedLifetime(callbacks) {}  // Released here, with the loop consistent: their deinits may call in.
        // Every item is out of this loop now, its state reset: another loop may take it (``ItemCore/bind(to:)``).
        control.lifecycle.store(.released, ordering: .releasing)
    }
}

/// Carries an item into a change closure; every item class is Sendable, the enum just does not say so.
struct UncheckedItem: @unchecked Sendable {
    let item: AnyItem
    init(_ item: AnyItem) { self.item = item }
}
