import RunLoopKitSystem

/// A watchdog that reports when a loop stays busy, without going back to sleep, for longer than a threshold:
/// the main-thread hang monitor known from Apple platforms, built on observers and a ``LoopThread``.
///
/// Observers on the watched loop store its activity and a time stamp on its clock (``Loop/now``) in one atomic word
/// each time it changes (the watched loop's whole cost: no lock, no allocation). A watchdog thread checks that word
/// every `threshold / consecutiveChecks`. The loop counts as *busy* from ``Loop/Activity/afterWaiting`` (or the start
/// of a pass or run) until the next ``Loop/Activity/beforeWaiting``; a loop asleep in `epoll_wait`, or not running
/// at all, is never stalled. A stall is reported once, while it is still going on, when `consecutiveChecks`
/// checks in a row found the loop busy in the same activity and it has lasted at least `threshold`.
///
/// With the loop's flight recorder on (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``), each report carries
/// the recorded passes (``Report/recording``) and names the longest callouts of the stalled pass: "the block
/// performed at Worker.swift:42 ran 78 ms", not only "busy for 80 ms".
///
/// On a loop on virtual time the busy stretch is judged on the virtual clock, which stands still while callouts run:
/// a callout's real duration is no stall there, so a slow machine cannot make a test's report come and go.
///
/// Threading: create and stop it from any thread. The handler runs on the watchdog thread, never on the watched
/// loop (which is stuck). Stop the monitor when done: releasing it also stops it.
public final class StallMonitor: Sendable {
    /// The loop being watched.
    public let loop: Loop
    /// How long the loop must stay busy to count as stalled.
    public let threshold: Duration
    /// How many checks in a row must find the same busy state; checks are `threshold / consecutiveChecks` apart.
    public let consecutiveChecks: Int

    private let early: LoopObserver
    private let late: LoopObserver
    private let watchdog: LoopThread

    /// Starts watching `loop`.
    ///
    /// - Parameters:
    ///   - loop: The loop to watch (any thread's, the main loop included).
    ///   - threshold: How long the loop must stay busy before a stall is reported. Default 50 ms.
    ///   - consecutiveChecks: How many checks in a row must see the stall (the usual Apple-platform detector uses 5
    ///     checks of 50 ms, that is `threshold: .milliseconds(250), consecutiveChecks: 5`). Default 1.
    ///   - modes: The modes whose runs are watched. Default: every common mode.
    ///   - handler: Called on the watchdog thread with each stall. Default: one line on standard error.
    /// - Throws: ``LoopError/Code/invalidInterval`` when `threshold` is not positive or `consecutiveChecks` is below
    ///   1; ``LoopError/Code/loopTerminated`` when the loop's thread has exited;
    ///   ``LoopError/Code/systemCallFailed`` when the watchdog thread cannot start.
    public init(
        loop: Loop,
        threshold: Duration = .milliseconds(50),
        consecutiveChecks: Int = 1,
        modes: [Loop.Mode] = [.common],
        handler: @escaping @Sendable (Report) -> Void = { StallMonitor.printToStandardError($0) }
    ) throws(LoopError) {
        guard threshold > .zero, consecutiveChecks >= 1 else {
            throw LoopError(
                .invalidInterval,
                message: "a stall threshold must be positive and checks at least 1, got \(threshold), "
                    + "\(consecutiveChecks)"
            )
        }
        self.loop = loop
        self.threshold = threshold
        self.consecutiveChecks = consecutiveChecks

        let heartbeat = Heartbeat(loop: loop)
        // The busy period starts as early as possible (before other observers of the activity) and ends as late as
        // possible: slow beforeWaiting or exit observers are part of the stall.
        early = LoopObserver(activities: [.entry, .beforeTimers, .beforeSources, .afterWaiting], order: .min) {
            _, activity in
            heartbeat.beat(activity)
        }
        late = LoopObserver(activities: [.beforeWaiting, .exit], order: .max) { _, activity in heartbeat.beat(activity)
        }
        watchdog = try LoopThread(name: "StallMonitor")

        let judge = Watchdog(heartbeat: heartbeat, threshold: threshold, consecutiveChecks: consecutiveChecks)
        let interval = threshold / consecutiveChecks
        let timer = try LoopTimer(after: interval, repeating: interval) { [loop] _ in
            // The watched loop's time: a loop on virtual time is busy for no time at all, so never stalls.
            guard let (beat, duration) = judge.check(now: loop.now) else { return }
            let threadID = heartbeat.threadID
            handler(
                Report(
                    threadID: threadID,
                    threadName: ThreadIdentity.name(of: threadID),
                    activity: beat.activity,
                    mode: loop.currentMode,
                    since: beat.since,
                    duration: duration,
                    threshold: threshold,
                    recording: loop.flightRecording()
                )
            )
        }
        do {
            try watchdog.loop.add(timer)
            for mode in modes {
                try loop.add(early, to: mode)
                try loop.add(late, to: mode)
            }
        } catch {
            stopObserving()
            throw error
        }
    }

    deinit {
        stop()
    }

    /// Stops watching: removes the observers from the watched loop and joins the watchdog thread. Idempotent;
    /// safe from any thread except from inside the report handler (the watchdog cannot join itself: there it
    /// only begins the stop, which completes when the monitor is released).
    public func stop() {
        stopObserving()
    }

    private func stopObserving() {
        early.invalidate()
        late.invalidate()
        watchdog.stop()
    }
}
