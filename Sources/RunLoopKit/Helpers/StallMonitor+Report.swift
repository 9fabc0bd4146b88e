import Glibc

extension StallMonitor {
    /// One stall: a loop that stayed busy, without going to sleep, for longer than the threshold.
    public struct Report: Sendable, CustomStringConvertible {
        /// The watched loop's kernel thread id (as `gettid(2)` says; 0 if `/proc` is not mounted).
        public let threadID: pid_t
        /// The watched thread's name as the kernel keeps it, if it could be read.
        public let threadName: String?
        /// The last activity the loop announced before it got stuck: ``Loop/Activity/afterWaiting`` (handling
        /// what woke it), ``Loop/Activity/beforeSources`` (blocks or sources of a pass that did not sleep),
        /// ``Loop/Activity/beforeTimers`` or ``Loop/Activity/entry``.
        public let activity: Loop.Activity
        /// The mode the loop was running when the stall was reported.
        public let mode: Loop.Mode?
        /// When the loop entered ``activity``, on the loop's clock (``Loop/now``: virtual on a loop on virtual time).
        public let since: Loop.Instant
        /// How long the loop had been stuck when the stall was reported; at least the threshold.
        public let duration: Duration
        /// The monitor's threshold.
        public let threshold: Duration
        /// The watched loop's flight recording, copied when the stall was reported: its last passes, the stalled one
        /// last (in progress, with the callout that is stuck still running); `nil` when the loop's flight recorder
        /// was never enabled (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``).
        public let recording: Loop.FlightRecording?

        /// The longest callouts of the stalled pass, longest first (at most 3): what the loop was doing. Empty
        /// without a ``recording``, or when the stalled pass made no callout (a stall in the loop itself).
        public var longestCallouts: [Loop.FlightRecording.Callout] {
            recording?.longestCallouts(ofLastPass: 3) ?? []
        }

        /// Creates a report. Made by the monitor only, so the type can gain fields without breaking code that
        /// reads it.
        init(
            threadID: pid_t,
            threadName: String?,
            activity: Loop.Activity,
            mode: Loop.Mode?,
            since: Loop.Instant,
            duration: Duration,
            threshold: Duration,
            recording: Loop.FlightRecording? = nil
        ) {
            self.threadID = threadID
            self.threadName = threadName
            self.activity = activity
            self.mode = mode
            self.since = since
            self.duration = duration
            self.threshold = threshold
            self.recording = recording
        }

        /// One line, e.g. `RunLoopKit stall: loop of thread 4242 "main" busy for 301.2 ms after afterWaiting in
        /// mode default (threshold 50.0 ms)`; with a ``recording``, followed by the longest callout of the stalled
        /// pass, e.g. `; longest callout: block performed at App/Worker.swift:42 ran 298.7 ms (still running)`.
        public var description: String {
            var text = "RunLoopKit stall: loop of thread \(threadID)"
            if let threadName { text += " \"\(threadName)\"" }
            text += " busy for \(Self.milliseconds(duration)) after \(activity)"
            text += " in mode \(mode.map(\.name) ?? "(none)") (threshold \(Self.milliseconds(threshold)))"
            if let longest = longestCallouts.first { text += "; longest callout: \(longest)" }
            return text
        }

        /// `duration` as milliseconds with one decimal, without Foundation.
        static func milliseconds(_ duration: Duration) -> String {
            let tenths = duration.saturatingMicroseconds / 100
            return "\(tenths / 10).\(tenths % 10) ms"
        }
    }

    /// The default report handler: writes the report's one line to standard error. Safe from any thread.
    ///
    /// One `write(2)` to descriptor 2 (unbuffered, so lines from several threads never interleave); Glibc's
    /// `stderr` global cannot be read from Swift 6 code that is checked for data races.
    public static func printToStandardError(_ report: Report) {
        var line = Array((report.description + "\n").utf8)
        _ = write(STDERR_FILENO, &line, line.count)
    }
}

extension Duration {
    /// The duration in whole microseconds, clamped to `Int64`'s range.
    fileprivate var saturatingMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000).partialValue
    }
}
