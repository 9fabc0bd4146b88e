import RunLoopKitSystem

/// The flight recorder: turning it on and off, reading it, and the loop's hooks around passes and callouts. Off, a
/// pass pays a load and a test at its start and end and per callout; on, see ``FlightRecorder`` and
/// Docs/Benchmarks.md.
extension Loop {
    /// Starts recording the loop's last `passes` passes and, in each, up to `calloutsPerPass` callouts: their kind,
    /// where their block was queued or their item made, when they began and how long they ran. Safe from any thread.
    ///
    /// The memory is allocated here, once (about `passes × (32 + 32 × calloutsPerPass)` bytes: 130 KiB for the
    /// defaults); the loop then writes into it without allocating, a few stores and two clock readings per callout,
    /// and no lock. Callouts beyond `calloutsPerPass` in a pass are counted, not kept. Calling it again replaces
    /// the recorder with an empty one of the new size.
    ///
    /// On the loop's thread it takes effect at once; from another thread, at the loop's next pass or block point (a
    /// sleeping loop is woken for it), as an item change does. Passes and callouts begun before that are not
    /// recorded. Callouts outside passes (observers of an outermost run's entry and exit) are not recorded.
    ///
    /// - Parameters:
    ///   - passes: How many of the last passes to keep, 1 to 65,536. Default 64.
    ///   - calloutsPerPass: How many callouts to keep per pass, 1 to 4,096. Default 64.
    /// - Throws: ``LoopError/Code/invalidArgument`` for a size out of range.
    public func enableFlightRecorder(passes: Int = 64, calloutsPerPass: Int = 64) throws(LoopError) {
        guard (1...FlightRecorder.maximumPasses).contains(passes),
            (1...FlightRecorder.maximumCallouts).contains(calloutsPerPass)
        else {
            throw LoopError(
                .invalidArgument,
                message: "a flight recorder keeps 1 to \(FlightRecorder.maximumPasses) passes of 1 to "
                    + "\(FlightRecorder.maximumCallouts) callouts, got \(passes) and \(calloutsPerPass)")
        }
        let recorder = FlightRecorder(passes: passes, calloutsPerPass: calloutsPerPass)
        metricsKeeper.recorderForReaders.withLock { $0 = recorder }
        onLoopThread { [self] in
            // Keeps it alive for the unmanaged references below (and lets the previous one go).
            metricsKeeper.heldRecorder = recorder
            metricsKeeper.endingRecorder = .passUnretained(recorder)
            metricsKeeper.flightRecorder = .passUnretained(recorder)
            timerTable.recordCallbackSites()
        }
    }

    /// Stops recording. Safe from any thread; takes effect as ``enableFlightRecorder(passes:calloutsPerPass:)``
    /// does. What was recorded stays readable with ``flightRecording()`` until the recorder is enabled again.
    public func disableFlightRecorder() {
        onLoopThread { [self] in metricsKeeper.flightRecorder = nil }
    }

    /// A copy of what the flight recorder holds now: the last passes, oldest first, with their callouts; `nil` if
    /// the recorder was never enabled. Safe from any thread, the loop's own included.
    ///
    /// Copies out of the ring without stopping the loop or making it wait: the loop writes on, and a pass record
    /// the loop reuses while it is being copied is left out of the copy (so a copy may hold fewer passes than the
    /// ring, rarely). The pass in progress and a callout still running are included, counted up to the moment of
    /// the copy: a loop stuck in a callout shows it. Allocates the copy.
    public func flightRecording() -> FlightRecording? {
        guard let recorder = metricsKeeper.recorderForReaders.withLock({ $0 }) else { return nil }
        let now = MonotonicClock.now()
        return FlightRecording(takenAt: Instant(nanoseconds: now), passes: recorder.copy(now: now))
    }

    // MARK: Hooks (loop thread only)

    /// A pass begins at `startedAt`: answers what ``recordPassEnd(_:endedAt:)`` takes, `Int.min` when nothing is
    /// recorded.
    @inline(__always)
    func recordPassStart(_ startedAt: Int64) -> Int {
        guard let recorder = metricsKeeper.flightRecorder else { return .min }
        return recorder._withUnsafeGuaranteedRef { $0.beginPass(startedAt: startedAt) }
    }

    /// The pass whose start answered `mark` ends at `endedAt`.
    @inline(__always)
    func recordPassEnd(_ mark: Int, endedAt: Int64) {
        if mark != .min { endRecordedPass(mark, endedAt: endedAt) }
    }

    @inline(never)
    private func endRecordedPass(_ mark: Int, endedAt: Int64) {
        metricsKeeper.endingRecorder?._withUnsafeGuaranteedRef { $0.endPass(mark, endedAt: endedAt) }
    }

    /// A callout of `kind` for an item, block or callback made at `site` begins: answers what
    /// ``recordCalloutEnd(_:)`` takes, -1 when it is not recorded. `site` is read only when the recorder is on, so a
    /// site kept out of line (an item's, a callback's side table) costs nothing while it is off.
    @inline(__always)
    func recordCalloutStart(_ kind: FlightRecording.Callout.Kind, at site: @autoclosure () -> CallSite) -> Int {
        guard let recorder = metricsKeeper.flightRecorder else { return -1 }
        let site = site()
        return recorder._withUnsafeGuaranteedRef { $0.beginCallout(kind, at: site) }
    }

    /// The callout whose start answered `token` returned.
    @inline(__always)
    func recordCalloutEnd(_ token: Int) {
        if token >= 0 { endRecordedCallout(token) }
    }

    @inline(never)
    private func endRecordedCallout(_ token: Int) {
        metricsKeeper.endingRecorder?._withUnsafeGuaranteedRef { $0.endCallout(token) }
    }
}
