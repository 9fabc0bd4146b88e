/// An item the loop calls when its event comes: a signalled ``LoopSource``, a ready ``DescriptorBackedSource`` (a
/// ``FileDescriptorSource`` or one of RunLoopKitServices' sources), a due ``LoopTimer``. Unlike observers, such items
/// keep the runs of their modes going, and each may carry a rate limit; this protocol gives all of them the same
/// four properties.
///
/// RunLoopKit's item classes are its only conformers (a conformance elsewhere would have nothing to add).
public protocol LoopEventItem: LoopItem {}

extension LoopEventItem {
    /// Whether this item keeps runs of its modes going (default `true`, CF's rule). Set it to `false` for one that
    /// should work while the loop runs for other reasons but never be the reason (libuv's `uv_unref`): a periodic
    /// statistics timer, a daemon's file watcher. A run whose mode holds only such items returns
    /// ``Loop/RunResult/finished`` (on ``Loop/main``, once ``Loop/mainQueueKeepsRunAlive`` is `false`: by default the
    /// main queue keeps the main loop's runs going). Safe from any thread; from another thread it takes effect at the
    /// loop's next pass.
    public var keepsRunAlive: Bool {
        get { keepsRunAliveRequested.load(ordering: .relaxed) }
        set { requestKeepsRunAlive(newValue, for: AnyItem(self)) }
    }

    /// At most how often the loop calls this item's handler: `nil` (the default) for no limit. Safe from any thread;
    /// on the loop's thread it applies at once, from another thread before the loop's next pass.
    ///
    /// When a call would exceed the limit, the item is paused instead until the limit's window ends, losing nothing:
    /// a source stays signalled (signals meanwhile coalesce into it) and is performed once the pause ends; a
    /// descriptor-backed source's watch leaves the loop's epoll set (other sources of the descriptor keep theirs), so
    /// a descriptor that stays ready no longer wakes the loop, and it is told what still holds afterwards; a timer
    /// fires once in place of every firing due meanwhile, keeping its grid. ``isRateLimited`` is true meanwhile, and
    /// ``rateLimitHandler`` is told. Setting `nil` during a pause ends it at once; setting another limit keeps the
    /// pause to its end, then counts by the new limit. See ``RateLimit``, and Docs/RateLimits.md.
    public var rateLimit: RateLimit? {
        get { existingRateLimiter?.settings.withLock { $0.limit } }
        set { requestRateLimit(newValue, for: AnyItem(self)) }
    }

    /// Whether the item is paused by its ``rateLimit`` now. Safe from any thread; the answer may be stale at once.
    public var isRateLimited: Bool {
        existingRateLimiter?.isLimited.load(ordering: .acquiring) ?? false
    }

    /// Called on the loop's thread with the item and `true` when its ``rateLimit`` pauses it, and with `false` when
    /// the pause ends (not when the item is invalidated during one). Safe to set from any thread; `nil` by default.
    public var rateLimitHandler: (@Sendable (Self, _ isLimited: Bool) -> Void)? {
        get { existingRateLimiter?.settings.withLock { $0.handler } as? @Sendable (Self, Bool) -> Void }
        set {
            guard let newValue else {
                storeRateLimitHandler(nil, callout: nil)
                return
            }
            // The loop calls it with this very item, which is a `Self`.
            storeRateLimitHandler(newValue) { item, isLimited in
                newValue(unsafeDowncast(item, to: Self.self), isLimited)
            }
        }
    }
}

extension LoopItem {
    /// Records `limit` as the item's rate limit; its owner, if any, applies it on its thread (an item not added yet
    /// gets it when it joins a mode). Any thread.
    final func requestRateLimit(_ limit: RateLimit?, for item: AnyItem) {
        guard limit != nil || existingRateLimiter != nil else { return }  // No limit, and never had one.
        let changed = rateLimiter.settings.withLock { settings in
            defer { settings.limit = limit }
            return settings.limit != limit
        }
        guard changed else { return }
        owner?.onLoopThread(with: UncheckedItem(item)) { loop, item in loop.applyRateLimit(item.item) }
    }

    /// Stores the handler told when a pause begins and ends: as set (for the getter) and as the loop calls it. Any
    /// thread.
    final func storeRateLimitHandler(_ handler: (any Sendable)?, callout: (@Sendable (LoopItem, Bool) -> Void)?) {
        guard handler != nil || existingRateLimiter != nil else { return }
        rateLimiter.settings.withLock {
            $0.handler = handler
            $0.callout = callout
        }
    }
}
