import RunLoopKitSystem
import Synchronization

/// Measures how late a loop serves a timer, as a distribution of delays: Node's
/// `perf_hooks.monitorEventLoopDelay()`, on a loop.
///
/// The monitor adds one repeating probe timer to the loop, with no tolerance, every `resolution`. Each time the
/// probe fires, its handler records how long after its due time it runs: the time the loop took to notice the
/// timerfd, to finish the pass or handler that held it up, and to reach its timers. A loop that keeps up shows tens
/// of microseconds; a handler that blocks for 30 ms shows up as a delay of about 30 ms, less whatever part of the
/// wait was the probe's own interval. When the loop was held up for several intervals, the missed firings are one
/// firing, recorded once, with the delay since the earliest missed one.
///
/// An idle loop is not woken by the probe (unlike Node's, by default): when a firing finds that the loop slept
/// through the whole interval and woke only for the probe, the probe rests, and the next wake-up of the loop, for
/// whatever reason, sets it going again one `resolution` later. A handler that then holds the loop up is measured
/// as before; what is not recorded is the idle loop's own wake-up latency, a sample every `resolution` that
/// measures the kernel rather than the code on the loop. Pass `wakesIdleLoop: true` for Node's behaviour: a
/// sample every `resolution` whatever the loop does, at the cost of waking an idle loop that often (100 wake-ups a
/// second at the default 10 ms, about 1 % of a CPU here).
///
/// Cost: nothing for a loop without a monitor (the loop itself does no extra work per pass, timer or sleep). With
/// one, the probe is an ordinary timer: at most one firing per `resolution`, and per firing a clock reading and a
/// short locked update of fixed-size buckets, with no allocation; unless `wakesIdleLoop`, an observer of
/// `afterWaiting` adds a callout per wake-up that counts it (two relaxed atomics). The histogram takes about 10 KB,
/// once. The probe does not keep runs alive. A loop driven by a host (``Loop/runPass(in:)``) never announces its
/// wake-ups, so its probe never rests.
///
/// Threading: create, read, reset and stop it from any thread. The probe runs on the loop's thread; readers never
/// wait for more than one recording. Releasing the monitor stops it.
public final class LoopDelayMonitor: Sendable {
    /// The loop being measured.
    public let loop: Loop
    /// How often the probe timer fires.
    public let resolution: Duration

    /// Whether the probe also fires while the loop has nothing else to do (see the type).
    public let wakesIdleLoop: Bool

    private let probe: LoopTimer
    /// Counts the loop's wake-ups and wakes a resting probe; `nil` when ``wakesIdleLoop``.
    private let wakeWatcher: LoopObserver?
    private let histogram: Locked<DelayHistogram>

    /// The smallest resolution accepted: a probe that fires more often would keep the loop itself busy.
    public static let minimumResolution: Duration = .milliseconds(1)

    /// Starts measuring `loop`'s timer delays.
    ///
    /// - Parameters:
    ///   - loop: The loop to measure (any thread's, the main loop included).
    ///   - resolution: How often the probe fires, at least ``minimumResolution``; Node's default is 10 ms.
    ///   - modes: The modes the probe runs in. Default: every common mode.
    ///   - wakesIdleLoop: `true` for a probe that fires every `resolution` even while the loop is idle (Node's
    ///     behaviour); `false` (the default) lets an idle loop sleep (see the type).
    /// - Throws: ``LoopError/Code/invalidInterval`` for a resolution below ``minimumResolution`` or above
    ///   ``LoopTimer/maximumInterval``; what ``Loop/add(_:to:)-(LoopItem,_)`` throws (e.g.
    ///   ``LoopError/Code/loopTerminated`` when the loop's thread has exited).
    public init(
        loop: Loop, resolution: Duration = .milliseconds(10), modes: [Loop.Mode] = [.common],
        wakesIdleLoop: Bool = false
    )
        throws(LoopError)
    {
        guard resolution >= Self.minimumResolution else {
            throw LoopError(
                .invalidInterval, message: "a delay monitor's resolution must be at least 1 ms, got \(resolution)")
        }
        let histogram = Locked(DelayHistogram())
        let wakes = wakesIdleLoop ? nil : WakeCount()
        // On the loop's time (`loop.now`, `.now` in the handlers, which run on its thread): it may be virtual.
        probe = try LoopTimer(at: loop.now + resolution, repeating: resolution) { timer in
            // The due time of this firing: the loop moves a repeating timer to its next time after the handler.
            let delay = Loop.Instant.now.nanoseconds &- timer.nextFireTime.nanoseconds
            histogram.withLock { $0.record(delay) }
            if let wakes, wakes.sleptThroughInterval() {
                wakes.isResting.store(true, ordering: .relaxed)
                timer.setNextFireTime(.distantFuture)
            }
        }
        probe.keepsRunAlive = false
        if let wakes {
            wakeWatcher = LoopObserver(activities: .afterWaiting) { [probe] _, _ in
                wakes.count.add(1, ordering: .relaxed)
                if wakes.isResting.load(ordering: .relaxed) {
                    wakes.isResting.store(false, ordering: .relaxed)
                    probe.setNextFireTime(.now + resolution)
                }
            }
        } else {
            wakeWatcher = nil
        }
        self.loop = loop
        self.resolution = resolution
        self.wakesIdleLoop = wakesIdleLoop
        self.histogram = histogram
        do {
            for mode in modes {
                try loop.add(probe, to: mode)
                if let wakeWatcher { try loop.add(wakeWatcher, to: mode) }
            }
        } catch {
            probe.invalidate()
            wakeWatcher?.invalidate()
            throw error
        }
    }

    deinit {
        stop()
    }

    /// The delays recorded since the monitor started or was last reset. Any thread.
    public var distribution: Distribution {
        histogram.withLock { Distribution($0) }
    }

    /// Forgets the delays recorded so far (Node's `histogram.reset()`); the probe keeps running. Any thread.
    public func reset() {
        histogram.withLock { $0.reset() }
    }

    /// Stops the probe: it is removed from the loop, and ``distribution`` keeps what was recorded. Idempotent; any
    /// thread, the loop's own included.
    public func stop() {
        probe.invalidate()
        wakeWatcher?.invalidate()
    }

    /// Whether the probe still runs (``stop()`` not called, the loop's thread not exited).
    public var isRunning: Bool { probe.isValid }
}

extension LoopDelayMonitor {
    /// The loop's wake-ups as the probe sees them, for letting an idle loop sleep. Touched on the loop's thread only
    /// (the probe's handler and the observer's); atomics only so the type is `Sendable` without a lock.
    private final class WakeCount: Sendable {
        /// Wake-ups of the loop (its `afterWaiting`), counted by the observer.
        let count = Atomic<Int>(0)
        /// ``count`` at the probe's previous firing.
        let countAtLastFiring = Atomic<Int>(0)
        /// Whether the probe rests (fire time in the distant future) until the loop's next wake-up.
        let isResting = Atomic<Bool>(false)

        /// Whether the loop woke exactly once since the probe's previous firing (the wake-up for this firing): it
        /// slept through the interval with nothing else to do. Loop thread; called once per firing.
        func sleptThroughInterval() -> Bool {
            let now = count.load(ordering: .relaxed)
            let wakes = now &- countAtLastFiring.load(ordering: .relaxed)
            countAtLastFiring.store(now, ordering: .relaxed)
            return wakes == 1
        }
    }
}
