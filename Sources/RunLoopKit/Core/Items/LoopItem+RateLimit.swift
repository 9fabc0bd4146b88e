/// Rate limits of custom sources, descriptor sources and timers (``RateLimit``): the public properties of each, and
/// what they share. The loop's side (counting, pausing, resuming) is in Loop+RateLimits.swift.
extension LoopItem {
    /// The limit last set, `nil` for none. Any thread.
    final var requestedRateLimit: RateLimit? {
        existingRateLimiter?.settings.withLock { $0.limit }
    }

    /// Whether the item is paused by its rate limit now. Any thread; the answer may be stale at once.
    final var isPausedByRateLimit: Bool {
        existingRateLimiter?.isLimited.load(ordering: .acquiring) ?? false
    }

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

    /// Stores the typed handler told when a pause begins and ends. Any thread.
    final func storeRateLimitHandler(_ handler: (any Sendable)?) {
        guard handler != nil || existingRateLimiter != nil else { return }
        rateLimiter.settings.withLock { $0.handler = handler }
    }

    /// The typed handler last stored. Any thread.
    final var storedRateLimitHandler: (any Sendable)? {
        existingRateLimiter?.settings.withLock { $0.handler }
    }
}

extension LoopSource {
    /// At most how often the loop performs this source: `nil` (the default) for no limit. Safe from any thread; on the
    /// loop's thread it applies at once, from another thread before the loop's next pass.
    ///
    /// When a perform would exceed the limit, the source is paused instead until the limit's window ends: it stays
    /// signalled (``isSignalled``), signals meanwhile coalesce into it as always, and the loop performs it once the
    /// pause ends. ``isRateLimited`` is true meanwhile, and ``rateLimitHandler`` is told. Setting `nil` during a pause
    /// ends it at once; setting another limit keeps the pause to its end, then counts by the new limit. See
    /// ``RateLimit``, and Docs/Services.md, "Rate limits".
    public var rateLimit: RateLimit? {
        get { requestedRateLimit }
        set { requestRateLimit(newValue, for: .source(self)) }
    }

    /// Whether the source is paused by its ``rateLimit`` now. Safe from any thread; the answer may be stale at once.
    public var isRateLimited: Bool { isPausedByRateLimit }

    /// Called on the loop's thread with the source and `true` when its ``rateLimit`` pauses it, and with `false`
    /// when the pause ends (not when the source is invalidated during one). Safe to set from any thread; `nil` by
    /// default.
    public var rateLimitHandler: (@Sendable (LoopSource, _ isLimited: Bool) -> Void)? {
        get { storedRateLimitHandler as? @Sendable (LoopSource, Bool) -> Void }
        set { storeRateLimitHandler(newValue) }
    }
}

extension FileDescriptorSource {
    /// At most how often the loop calls this source's handler: `nil` (the default) for no limit. Safe from any thread;
    /// on the loop's thread it applies at once, from another thread before the loop's next pass.
    ///
    /// When a call would exceed the limit, the source is paused instead until the limit's window ends: what it
    /// watches is taken out of the loop's epoll set (other sources of the same descriptor keep theirs), so a
    /// descriptor that stays ready no longer wakes the loop. Once the pause ends the source watches again and, the
    /// readiness being level-triggered, is told of what still holds. ``isRateLimited`` is true meanwhile, and
    /// ``rateLimitHandler`` is told. Setting `nil` during a pause ends it at once; setting another limit keeps the
    /// pause to its end, then counts by the new limit. See ``RateLimit``, and Docs/Services.md, "Rate limits".
    public var rateLimit: RateLimit? {
        get { requestedRateLimit }
        set { requestRateLimit(newValue, for: .descriptor(self)) }
    }

    /// Whether the source is paused by its ``rateLimit`` now. Safe from any thread; the answer may be stale at once.
    public var isRateLimited: Bool { isPausedByRateLimit }

    /// Called on the loop's thread with the source and `true` when its ``rateLimit`` pauses it, and with `false`
    /// when the pause ends (not when the source is invalidated during one). Safe to set from any thread; `nil` by
    /// default.
    public var rateLimitHandler: (@Sendable (FileDescriptorSource, _ isLimited: Bool) -> Void)? {
        get { storedRateLimitHandler as? @Sendable (FileDescriptorSource, Bool) -> Void }
        set { storeRateLimitHandler(newValue) }
    }
}

extension LoopTimer {
    /// At most how often the loop fires this timer: `nil` (the default) for no limit. Safe from any thread; on the
    /// loop's thread it applies at once, from another thread before the loop's next pass.
    ///
    /// When a firing would exceed the limit, the timer is paused instead until the limit's window ends, then fires
    /// once in place of all the firings due meanwhile, as for missed fire times (a repeating timer keeps its grid).
    /// ``isRateLimited`` is true meanwhile, and ``rateLimitHandler`` is told. Setting `nil` during a pause ends it at
    /// once; setting another limit keeps the pause to its end, then counts by the new limit. Useful for a timer whose
    /// handler re-arms it for "now" again and again. See ``RateLimit``, and Docs/Services.md, "Rate limits".
    public var rateLimit: RateLimit? {
        get { requestedRateLimit }
        set { requestRateLimit(newValue, for: .timer(self)) }
    }

    /// Whether the timer is paused by its ``rateLimit`` now. Safe from any thread; the answer may be stale at once.
    public var isRateLimited: Bool { isPausedByRateLimit }

    /// Called on the loop's thread with the timer and `true` when its ``rateLimit`` pauses it, and with `false`
    /// when the pause ends (not when the timer is invalidated during one). Safe to set from any thread; `nil` by
    /// default.
    public var rateLimitHandler: (@Sendable (LoopTimer, _ isLimited: Bool) -> Void)? {
        get { storedRateLimitHandler as? @Sendable (LoopTimer, Bool) -> Void }
        set { storeRateLimitHandler(newValue) }
    }
}
