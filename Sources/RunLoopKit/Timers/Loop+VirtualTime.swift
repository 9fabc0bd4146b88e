import RunLoopKitSystem

/// Virtual time, for tests: a loop whose clock moves only when it is durably idle or told to, so code with 30 s
/// back-offs and 5-minute watchdogs runs in milliseconds, in the same order every time (Docs/TestingAndDiagnosing.md).
///
/// The choice is made once, when the loop is made: ``withVirtualTime(startingAt:advancesWhenIdle:_:)`` on the test's
/// thread, or a ``LoopThread`` with ``LoopThread/Options/virtualTime``. ``main`` is never virtual.
extension Loop {
    /// Whether the loop runs on virtual time: its timers, deadlines, ``now`` and, on its thread,
    /// ``Instant/now`` follow its own clock instead of `CLOCK_MONOTONIC`. Fixed when the loop is made. Any thread.
    public var isVirtual: Bool { control.virtualClock != nil }

    /// The loop's time: `CLOCK_MONOTONIC` for a loop on real time, its virtual clock for a loop on virtual time. Any
    /// thread (another thread may see a virtual clock move at any moment, as it would the real one).
    ///
    /// On the loop's own thread ``Instant/now`` answers the same; from other threads, make a virtual loop's
    /// deadlines from this (`LoopTimer(at: loop.now + delay)`), not from `.now`.
    public var now: Instant { Instant(nanoseconds: clockNow()) }

    /// Whether a run of this virtual loop moves its clock by itself when the loop is durably idle: to the first
    /// timer's or callback's fire time (its latest, with tolerance), or to the run's deadline, whichever is earlier.
    /// `false`: only ``advance(by:in:)``, ``advance(to:in:)`` and ``runUntilIdle(in:)`` move it, and a run that
    /// would sleep waits for real for a descriptor or another thread. Default `true`. Always `false` on real time;
    /// setting it there traps. Any thread.
    ///
    /// Durably idle means: the loop announced its sleep and found no work of its own or from another thread, and a
    /// poll of its epoll set then found no descriptor ready and no wake-up. What that cannot know is work about to
    /// come: another thread that is still computing the block it will post, a child that has not exited yet, a peer
    /// whose bytes are still on the way. With this `true`, such work arrives after the timers it would have beaten
    /// on a real clock. Tests that wait for other threads set it to `false` and move time with ``advance(by:in:)``
    /// once that work has arrived.
    public var advancesWhenIdle: Bool {
        get { control.virtualClock?.advancesWhenIdle.load(ordering: .relaxed) ?? false }
        set {
            guard let virtual = control.virtualClock else {
                trap("RunLoopKit: advancesWhenIdle set on a loop on real time; only a loop on virtual time has it")
            }
            virtual.advancesWhenIdle.store(newValue, ordering: .relaxed)
        }
    }

    /// Moves the virtual clock `duration` forward, running the loop in `mode` on the way: every timer and callback
    /// of `mode` due up to then fires in fire-time order, each when the clock reads its (latest) fire time, with the
    /// blocks, sources and descriptors that become ready between them. Returns when the clock reads the target and
    /// the loop is durably idle there. Loop thread only (traps otherwise); may be called from a callout (a nested
    /// run).
    ///
    /// A ``stop()`` during the advance ends the run in progress; the advance goes on to the target. A mode with
    /// nothing in it has nothing to run: the clock is set to the target.
    /// - Throws: ``LoopError/Code/notVirtual`` on a loop on real time; ``LoopError/Code/invalidArgument`` for a
    ///   negative duration (time does not go back); ``LoopError/Code/invalidMode`` for ``Mode/common``.
    public func advance(by duration: Duration, in mode: Mode = .default) throws(LoopError) {
        preconditionOnLoopThread("advance(by:in:)")
        let virtual = try virtualClock(for: "advance(by:in:)")
        guard duration >= .zero else {
            throw LoopError(
                .invalidArgument, message: "advance(by: \(duration)): a loop's virtual time does not go back")
        }
        try drive(virtual, in: mode, to: virtual.now.addingSaturating(duration.saturatingNanoseconds))
    }

    /// Moves the virtual clock forward to `instant`, running the loop in `mode` on the way, as
    /// ``advance(by:in:)`` does. Loop thread only (traps otherwise).
    /// - Throws: ``LoopError/Code/notVirtual`` on a loop on real time; ``LoopError/Code/invalidArgument`` for an
    ///   instant before ``now`` (time does not go back); ``LoopError/Code/invalidMode`` for ``Mode/common``.
    public func advance(to instant: Instant, in mode: Mode = .default) throws(LoopError) {
        preconditionOnLoopThread("advance(to:in:)")
        let virtual = try virtualClock(for: "advance(to:in:)")
        guard instant.nanoseconds >= virtual.now else {
            throw LoopError(
                .invalidArgument,
                message: "advance(to: \(instant)) is before the loop's time, \(now): its virtual time does not go back")
        }
        try drive(virtual, in: mode, to: instant.nanoseconds)
    }

    /// Runs the loop in `mode` without moving its virtual clock until it is durably idle: blocks, signalled
    /// sources, ready descriptors and whatever is due now run, and what they make ready now, until nothing is
    /// left. Loop thread only (traps otherwise).
    ///
    /// Work that keeps making more work for now (a block that posts itself) never lets it return, as it would
    /// never let a real loop sleep.
    /// - Throws: ``LoopError/Code/notVirtual`` on a loop on real time; ``LoopError/Code/invalidMode`` for
    ///   ``Mode/common``.
    public func runUntilIdle(in mode: Mode = .default) throws(LoopError) {
        preconditionOnLoopThread("runUntilIdle(in:)")
        let virtual = try virtualClock(for: "runUntilIdle(in:)")
        try drive(virtual, in: mode, to: virtual.now)
    }

    /// Makes a new loop on virtual time the calling thread's loop while `body` runs, and hands it to `body`: code
    /// under test that takes a ``Loop`` gets it as an argument, code that uses ``current`` finds it there, and
    /// ``Instant/now`` reads its clock on this thread. Afterwards the loop is torn down as a thread's exit would tear
    /// it down (its items removed, pending blocks dropped) and the thread gets its former loop back. Any thread, but
    /// not inside a run of the thread's loop (traps). On the main thread ``main`` stays the real main loop, which is
    /// never virtual: while `body` runs it is not the thread's loop, so running it there traps.
    ///
    /// ```swift
    /// try Loop.withVirtualTime { loop in
    ///     try loop.add(try LoopTimer(after: .seconds(30)) { _ in print("fired at \(loop.now)") })
    ///     loop.run()  // Durably idle: the clock jumps 30 s, the timer fires ("fired at 30.000000000s"), and the
    ///                 // mode is empty: the run returns.
    /// }
    /// ```
    ///
    /// `body` is synchronous: an `await` could resume on another thread, away from the loop. For async code under
    /// test, use a ``LoopThread`` made with ``LoopThread/Options/virtualTime``.
    /// - Parameters:
    ///   - start: The clock's first reading. Default: 0 ns, so instants in a test read as offsets from its start.
    ///   - advancesWhenIdle: ``advancesWhenIdle``: `true` (default) lets runs move the clock when durably idle.
    ///   - body: The test, given the virtual loop, which is the calling thread's loop while it runs.
    /// - Returns: What `body` returned.
    public static func withVirtualTime<Result, Failure: Error>(
        startingAt start: Instant = Instant(nanoseconds: 0),
        advancesWhenIdle: Bool = true,
        _ body: (Loop) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let clock = VirtualClock(startingAt: start.nanoseconds, advancesWhenIdle: advancesWhenIdle)
        return try LoopRegistry.withVirtualLoop(clock, body)
    }

    /// The loop's virtual clock, or ``LoopError/Code/notVirtual`` naming `call`.
    private func virtualClock(for call: String) throws(LoopError) -> VirtualClock {
        guard let virtual = control.virtualClock else {
            throw LoopError(
                .notVirtual,
                message: "\(call) on a loop on real time: only a loop made on virtual time (Loop.withVirtualTime, "
                    + "LoopThread.Options.virtualTime) can be advanced")
        }
        return virtual
    }

    /// Runs `mode` until the clock reads `target` and a pass there found the loop durably idle. The run goes on
    /// while its mode is empty (``keepsRunningWhenEmpty`` for its length): a timer that does not keep runs alive
    /// (a watchdog's, a monitor's probe) still fires on the way.
    private func drive(_ virtual: VirtualClock, in mode: Mode, to target: Int64) throws(LoopError) {
        guard mode != .common else {
            throw LoopError(.invalidMode, message: "time advances by running one mode, not Mode.common")
        }
        virtual.advancing.add(1, ordering: .relaxed)
        let keptRunning = control.keepsRunningWhenEmpty.exchange(true, ordering: .relaxed)
        defer {
            control.keepsRunningWhenEmpty.store(keptRunning, ordering: .relaxed)
            virtual.advancing.subtract(1, ordering: .relaxed)
        }
        while true {
            let result = run(mode: mode, deadline: target, pollOnce: false, returnAfterSourceHandled: false)
            if result == .finished || result == .timedOut { break }
        }
        if virtual.now < target { virtual.nanoseconds.store(target, ordering: .relaxed) }
    }
}
