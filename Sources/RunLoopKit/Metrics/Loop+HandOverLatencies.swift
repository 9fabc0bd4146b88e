import RunLoopKitSystem

/// Hand-over latencies: turning them on, reading them, the stamp that posting threads put on blocks and jobs, and
/// the loop's hooks where the work starts to run. Off, nothing reads a clock and nothing is recorded: a post pays a
/// relaxed load and a test, a block or job run a test of its stamp, a timer, descriptor or main-queue callout a
/// load and a test.
extension Loop {
    /// Starts recording how long work handed to this loop waits before it runs, per kind (see
    /// ``HandOverLatencies``). Safe from any thread; calling it again changes nothing.
    ///
    /// Posting threads stamp blocks and jobs from the call on; the loop records from its next pass or block point
    /// on this thread at once (a sleeping loop is woken for it). Blocks stamped before the loop took the change
    /// are recorded too, once it has. The histograms (about 50 KB) are allocated here, once, and kept for the
    /// loop's lifetime.
    ///
    /// Cost when on: a posting thread reads the clock once per block or job; the loop reads it once per recorded
    /// value (and once per `epoll_wait` that returns events) and counts the value with relaxed loads and stores,
    /// no lock (see Docs/Benchmarks.md).
    public func enableHandOverLatencies() {
        let recorder = metricsKeeper.handOversForReaders.withLock { kept in
            if kept == nil { kept = HandOverRecorder() }
            return kept!
        }
        metricsKeeper.stampsHandOvers.store(true, ordering: .relaxed)
        onLoopThread { [self] in metricsKeeper.handOvers = .passUnretained(recorder) }
    }

    /// Stops recording hand-over latencies; what was recorded stays readable. Safe from any thread; the loop stops
    /// at its next pass or block point, as ``enableHandOverLatencies()`` starts.
    public func disableHandOverLatencies() {
        metricsKeeper.stampsHandOvers.store(false, ordering: .relaxed)
        onLoopThread { [self] in metricsKeeper.handOvers = nil }
    }

    /// Forgets the hand-over latencies recorded so far, so that later snapshots hold only later values: for figures
    /// per reporting interval (read, then reset). Safe from any thread; done on the loop's thread, at once when
    /// called there (a timer of the loop itself reads and resets with nothing lost between), else before its next
    /// pass. Does nothing if they were never enabled.
    public func resetHandOverLatencies() {
        guard let recorder = metricsKeeper.handOversForReaders.withLock({ $0 }) else { return }
        onLoopThread { recorder.reset() }
    }

    /// The hand-over latencies recorded so far, one distribution per kind of work; `nil` if they were never
    /// enabled. Safe from any thread, the loop's own included; allocates the snapshot.
    public func handOverLatencies() -> HandOverLatencies? {
        guard let recorder = metricsKeeper.handOversForReaders.withLock({ $0 }) else { return nil }
        return HandOverLatencies(recorder)
    }

    // MARK: Stamps (any thread)

    /// The stamp for a block or job being handed over now: 0 (not stamped) while hand-over latencies are off, at
    /// the cost of a relaxed load and a test; else the monotonic clock in units of 128 ns, in 32 bits, so that it
    /// fits the block's padding and a block is no larger. Latencies of 9 minutes and more wrap around. Read before
    /// the inbox's lock is taken, and stored by the queue into the block it has just placed (``BlockQueue/stampLast(_:)``):
    /// the block itself is never copied or changed on the way.
    @inline(__always)
    func handOverStamp() -> UInt32 {
        metricsKeeper.stampsHandOvers.load(ordering: .relaxed) ? Self.stamp(MonotonicClock.now()) : 0
    }

    /// `nanoseconds` of the monotonic clock as a stamp, never 0.
    @inline(__always)
    static func stamp(_ nanoseconds: Int64) -> UInt32 {
        max(1, UInt32(truncatingIfNeeded: nanoseconds >> 7))
    }

    // MARK: Hooks (loop thread only)

    /// A block or job stamped `stamp` (0: not stamped) starts to run.
    @inline(__always)
    func recordHandOver(_ kind: HandOverRecorder.Kind, stamp: UInt32) {
        if stamp != 0 { recordStamped(kind, stamp) }
    }

    @inline(never)
    private func recordStamped(_ kind: HandOverRecorder.Kind, _ stamp: UInt32) {
        guard let recorder = metricsKeeper.handOvers else { return }
        let waited = Self.stamp(MonotonicClock.now()) &- stamp
        recorder._withUnsafeGuaranteedRef { $0.record(kind, Int64(waited) << 7) }
    }

    /// A timer due at `fireTime` (the loop's clock) starts its handler.
    @inline(__always)
    func recordTimerLateness(fireTime: Int64) {
        if metricsKeeper.handOvers != nil { recordLateness(fireTime) }
    }

    @inline(never)
    private func recordLateness(_ fireTime: Int64) {
        let late = clockNow() - fireTime
        metricsKeeper.handOvers?._withUnsafeGuaranteedRef { $0.record(.timer, late) }
    }

    /// The loop's `epoll_wait` returned `events` events.
    @inline(__always)
    func noteEventsReturned(_ events: Int) {
        if events > 0 && metricsKeeper.handOvers != nil { metricsKeeper.eventsReturnedAt = MonotonicClock.now() }
    }

    /// A descriptor source's handler, or the main queue's drain (`kind`), starts: recorded from the last return
    /// of `epoll_wait` with events.
    @inline(__always)
    func recordSinceEventsReturned(_ kind: HandOverRecorder.Kind) {
        if metricsKeeper.handOvers != nil { recordSinceWait(kind) }
    }

    @inline(never)
    private func recordSinceWait(_ kind: HandOverRecorder.Kind) {
        let returnedAt = metricsKeeper.eventsReturnedAt
        guard returnedAt != 0 else { return }
        let waited = MonotonicClock.now() - returnedAt
        metricsKeeper.handOvers?._withUnsafeGuaranteedRef { $0.record(kind, waited) }
    }
}
