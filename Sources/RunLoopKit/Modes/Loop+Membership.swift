/// Membership: which items are in which modes. Any thread may add and remove; the change is made on the loop's
/// thread (at once there, else before its next pass), with what each kind of item needs on joining and leaving.
extension Loop {
    /// Adds `item` to `mode` (or to every common mode, for ``Mode/common``, now and later). Safe from any thread: on
    /// the loop's thread the item joins at once; from another thread before the loop's next pass, and the loop is
    /// woken to make the change. Adding an item to a mode it is already in does nothing, as in CF (a mode holds an item
    /// once; `CFRunLoopAddSource` ignores a second add).
    ///
    /// What joining means for each kind, as in CF: a ``LoopSource``'s schedule handler runs on the loop's thread once
    /// per mode it newly joins, and a source signalled before it was added is performed; a ``LoopTimer`` is scheduled
    /// for its ``LoopTimer/nextFireTime``; a ``DescriptorBackedSource`` (a ``FileDescriptorSource``, or one of
    /// RunLoopKitServices' sources) is put in the loop's epoll set on its first add, on the calling thread, so a bad
    /// descriptor is reported here and now; if other sources of this loop watch the same descriptor (the same open
    /// file), it shares their registration instead: the loop watches the union of what they watch, and tells each
    /// source only what it watches. An item belongs to one loop: its first add binds it.
    /// - Throws: ``LoopError/Code/invalidated`` (an invalidated item, or a one-shot timer that fired: re-arm it with
    ///   ``LoopTimer/setNextFireTime(_:)``), ``LoopError/Code/ownedByAnotherLoop``,
    ///   ``LoopError/Code/loopTerminated`` (the loop's thread has exited); for a descriptor-backed source also
    ///   ``LoopError/Code/badDescriptor`` (closed or invalid descriptor), ``LoopError/Code/descriptorNotPollable``
    ///   (e.g. a regular file) and ``LoopError/Code/descriptorAlreadyRegistered`` (the descriptor is in the loop's
    ///   epoll set, but not through a source of this loop: one of the loop's own descriptors).
    public func add(_ item: LoopItem, to mode: Mode = .default) throws(LoopError) {
        // Timers first, on a path of their own: the kind added most often, one at a time (a request's deadline),
        // gets the code that knows it adds a timer, as its own overload did (W4: 10% fewer instructions per timer).
        if item.kind == .timer {
            try add(AnyItem.timer(unsafeDowncast(item, to: LoopTimer.self)), to: mode)
        } else {
            try addOther(item, to: mode)
        }
    }

    /// ``add(_:to:)-(LoopItem,_)`` for the other kinds.
    @inline(never)
    private func addOther(_ item: LoopItem, to mode: Mode) throws(LoopError) {
        try add(AnyItem(item), to: mode)
    }

    /// Removes `item` from `mode` (or from the common modes, for ``Mode/common``). Safe from any thread; removing what
    /// is not there does nothing, as CF's `CFRunLoopRemoveSource`. The item stays valid and can be added again.
    ///
    /// A ``LoopSource``'s cancel handler runs on the loop's thread; a ``LoopTimer`` removed from all its modes stops
    /// firing; a descriptor-backed source stays in the epoll set until it is invalidated (invalidate it before
    /// closing its descriptor), and RunLoopKitServices' sources keep counting what happens meanwhile (a signal's
    /// deliveries, a file's changes), reported when they are added to a mode again.
    public func remove(_ item: LoopItem, from mode: Mode = .default) {
        remove(AnyItem(item), from: mode)
    }

    /// Whether `item` is in `mode` of this loop (for ``Mode/common``: whether it was added to the common modes). Safe
    /// from any thread, as CF answers under its loop lock: on the loop's thread the answer includes changes just sent
    /// from other threads; from another thread it is a snapshot of what the loop's thread has applied (a change sent
    /// from another thread shows once the loop applied it, at its next pass), covering the loop's first 64 modes.
    public func contains(_ item: LoopItem, in mode: Mode = .default) -> Bool {
        contains(AnyItem(item), in: mode)
    }

    @inline(__always)
    private func add(_ item: AnyItem, to mode: Mode) throws(LoopError) {
        let base = item.base
        guard base.isValid else {
            throw LoopError(.invalidated, message: "an invalidated item cannot be added to a loop")
        }
        // Checked before binding, so an item offered to a dead loop stays free for a live one.
        guard !isTerminated else { throw terminatedLoopError }  // A parent's loop in a fork() child included.
        guard base.bind(to: self) else {
            throw LoopError(.ownedByAnotherLoop, message: "the item already belongs to another loop")
        }
        if case .descriptor(let source) = item {
            // Once per source and loop; later adds find it registered. An owned descriptor is held open meanwhile.
            try source.withRegistrableDescriptor { () throws(LoopError) in try register(source) }
            // Invalidated meanwhile, on another thread, before it saw the registration: release it here.
            if !source.isValid { removeRegistration(of: source) }
        }
        if isCurrent {  // Directly, not through `onLoopThread(with:_:)`: see there.
            join(item, to: mode)
        } else {
            onLoopThread(with: (UncheckedItem(item), mode)) { loop, change in loop.join(change.0.item, to: change.1) }
        }
    }

    /// Puts `item` in `mode` (or in every common mode, for ``Mode/common``). Loop thread only.
    @inline(__always)
    func join(_ item: AnyItem, to mode: Mode) {
        guard item.base.isValid else { return }
        if mode == .default {  // First: equal names compare as one word, unequal ones cost a call.
            addToMode(item, defaultMode)
        } else if mode == .common {
            guard modeTable.commonItems.updateValue(item, forKey: item.identity) == nil else { return }
            modeTable.commonCounts.adjust(item, by: 1)
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
        if case .timer(let timer) = item, timer.formerModes != nil { forgetFormerMode(mode, of: timer) }
        if mode == .common {
            guard modeTable.commonItems.removeValue(forKey: item.identity) != nil else { return }
            modeTable.commonCounts.adjust(item, by: -1)
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
    @inline(__always)
    func addToMode(_ item: AnyItem, _ state: ModeState) {
        let base = item.base
        guard base.isValid, !base.isIn(modeID: state.id) else { return }
        // `keepsRunAlive` set before it was added here, or from another thread: count it as asked.
        if base.countsTowardKeepAlive != base.keepsRunAliveRequested.load(ordering: .relaxed) {
            applyKeepsRunAlive(item)
        }
        if base.existingRateLimiter != nil { adoptRateLimit(item) }  // A limit set before it was added.
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
                timerTable.removeParked(timer)
                schedule(timer)
            }
        case .descriptor(let source):
            if source.watch == nil { enterWatch(source) }  // Its first mode here (it may fail, and leave at once).
            if let watch = source.watch, watch.isParked, state === runStack.mode {
                descriptorTable.parked.removeAll { $0 === watch }
                unpark(watch)
            }
        case .observer:
            break
        }
    }

    /// Takes `item` out of `state`, with what each kind needs on leaving. Loop thread only.
    @inline(__always)
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
    @inline(__always)
    func detachEverywhere(_ item: AnyItem) {
        if isCurrent {  // Directly, not through `onLoopThread(with:_:)`: see there.
            detachNow(item)
        } else {
            onLoopThread(with: UncheckedItem(item)) { loop, item in loop.detachNow(item.item) }
        }
    }

    /// Invalidation's work on the loop's thread (``detachEverywhere(_:)``). Loop thread only.
    @inline(__always)
    func detachNow(_ item: AnyItem) {
        if item.base.isCommon {
            modeTable.commonItems[item.identity] = nil
            modeTable.commonCounts.adjust(item, by: -1)
            item.base.isCommon = false
        }
        // Taken one at a time rather than iterated, so removing does not mutate what is being iterated.
        while let membership = item.base.memberships.any {
            if membership.modeID == defaultMode.id {
                removeFromMode(item, defaultMode)  // Without retaining the mode.
            } else {
                removeFromMode(item, modeTable.list[membership.modeID])
            }
        }
        switch item {
        case .timer(let timer): unschedule(timer)
        case .descriptor(let source): unregister(source)
        case .source, .observer: break
        }
        if item.base.appliedRateLimiter != nil { dropRateLimitPause(of: item) }
    }
}

extension Loop {
    /// Adds a descriptor source an async wait just created, on the loop's thread (now when called there, else
    /// before the loop's next pass), then calls `completion` there with `nil` or the error. Any thread.
    ///
    /// Why on the loop's thread, where `add` would register the descriptor on the calling thread:
    /// - A source added from another thread and invalidated before the loop applied the add (a wait cancelled at
    ///   once) would stay in the epoll set: the loop skips the add of an invalid item and so never learns of the
    ///   registration its removal should undo. Added on the loop's thread, add and registration are one step, and
    ///   a later invalidation always finds the registration.
    /// - A source invalidated from another thread leaves the loop's modes only at the loop's next pass: behind
    ///   that removal in the loop's inbox (which keeps order), a wait following a cancelled wait on the same
    ///   descriptor finds the loop's state settled. (Another live source of the descriptor is no obstacle: the
    ///   wait's source shares its registration.)
    ///
    /// If the loop's thread has exited, the change is dropped with `source`; the wait learns it from the source's
    /// ``DropSignal`` or from its own ``Loop/isTerminated`` check.
    func addWaitSource(
        _ source: DescriptorBackedSource,
        to mode: Mode,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        onLoopThread { [self] in
            do {
                try add(AnyItem.descriptor(source), to: mode)
                completion(nil)
            } catch {
                completion(error)
            }
        }
    }
}

/// Carries an item into a change closure; every item class is Sendable, the enum just does not say so.
struct UncheckedItem: @unchecked Sendable {
    let item: AnyItem
    init(_ item: AnyItem) { self.item = item }
}
