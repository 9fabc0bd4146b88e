import RunLoopKitSystem

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
/// Cost: nothing for a loop without a monitor (the loop itself does no extra work per pass, timer or sleep). With
/// one, the probe is an ordinary timer: one firing per `resolution`, and per firing a clock reading and a short
/// locked update of fixed-size buckets, with no allocation. The histogram takes about 10 KB, once. The probe does
/// not keep runs alive.
///
/// Threading: create, read, reset and stop it from any thread. The probe runs on the loop's thread; readers never
/// wait for more than one recording. Releasing the monitor stops it.
public final class LoopDelayMonitor: Sendable {
    /// The loop being measured.
    public let loop: Loop
    /// How often the probe timer fires.
    public let resolution: Duration

    private let probe: LoopTimer
    private let histogram: Locked<DelayHistogram>

    /// The smallest resolution accepted: a probe that fires more often would keep the loop itself busy.
    public static let minimumResolution: Duration = .milliseconds(1)

    /// Starts measuring `loop`'s timer delays.
    ///
    /// - Parameters:
    ///   - loop: The loop to measure (any thread's, the main loop included).
    ///   - resolution: How often the probe fires, at least ``minimumResolution``; Node's default is 10 ms.
    ///   - modes: The modes the probe runs in. Default: every common mode.
    /// - Throws: ``LoopError/Code/invalidInterval`` for a resolution below ``minimumResolution`` or above
    ///   ``LoopTimer/maximumInterval``; what ``Loop/add(_:to:)`` throws (e.g.
    ///   ``LoopError/Code/loopTerminated`` when the loop's thread has exited).
    public init(
        loop: Loop, resolution: Duration = .milliseconds(10), modes: [Loop.Mode] = [.common]
    )
        throws(LoopError)
    {
        guard resolution >= Self.minimumResolution else {
            throw LoopError(
                .invalidInterval, message: "a delay monitor's resolution must be at least 1 ms, got \(resolution)")
        }
        let histogram = Locked(DelayHistogram())
        probe = try LoopTimer(after: resolution, repeating: resolution) { timer in
            // The due time of this firing: the loop moves a repeating timer to its next time after the handler.
            let delay = MonotonicClock.now() &- timer.nextFireTime.nanoseconds
            histogram.withLock { $0.record(delay) }
        }
        probe.keepsRunAlive = false
        self.loop = loop
        self.resolution = resolution
        self.histogram = histogram
        do {
            for mode in modes { try loop.add(probe, to: mode) }
        } catch {
            probe.invalidate()
            throw error
        }
    }

    deinit {
        probe.invalidate()
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
    }

    /// Whether the probe still runs (``stop()`` not called, the loop's thread not exited).
    public var isRunning: Bool { probe.isValid }
}
