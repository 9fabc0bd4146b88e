extension LoopDelayMonitor {
    /// How late a loop served its probe timer, as a distribution: count, minimum, mean, maximum and percentiles of
    /// the delays recorded since the monitor started or was last reset (Node's `IntervalHistogram`). Also the
    /// distribution of each kind of ``Loop/HandOverLatencies``, where a delay is one hand-over's wait.
    ///
    /// A snapshot, taken with ``LoopDelayMonitor/distribution`` (or ``Loop/handOverLatencies()``) from any thread;
    /// it does not change afterwards.
    /// ``minimum``, ``maximum`` and ``mean`` are exact. Percentiles come from log-linear buckets: each reports the
    /// largest value its bucket holds (never less than the delays counted there, at most 1/32 more), capped at
    /// ``maximum``.
    ///
    /// Made by the monitor only, so it can gain figures without breaking code that reads it.
    public struct Distribution: Sendable, Hashable, CustomStringConvertible {
        /// Delays recorded: one per firing of the probe timer (for hand-over latencies, one per hand-over).
        public let count: Int
        /// The smallest delay; zero when none was recorded.
        public let minimum: Duration
        /// The largest delay; zero when none was recorded.
        public let maximum: Duration
        /// The mean delay; zero when none was recorded.
        public let mean: Duration
        /// The non-empty buckets, in order: a bucket's number and its count.
        private let buckets: [Bucket]

        private struct Bucket: Sendable, Hashable {
            let index: Int
            let count: UInt64
        }

        /// A snapshot of `histogram`.
        init(_ histogram: DelayHistogram) {
            count = histogram.count
            guard histogram.count > 0 else {
                minimum = .zero
                maximum = .zero
                mean = .zero
                buckets = []
                return
            }
            minimum = .nanoseconds(histogram.minimum)
            maximum = .nanoseconds(histogram.maximum)
            mean = .nanoseconds(histogram.sum / Int64(histogram.count))
            var buckets: [Bucket] = []
            for (index, count) in histogram.counts.enumerated() where count > 0 {
                buckets.append(Bucket(index: index, count: count))
            }
            self.buckets = buckets
        }

        /// The delay that `percent` percent of the recorded delays do not exceed (within a bucket's width), from 0
        /// to 100; zero when none was recorded. Values outside 0...100 are clamped.
        public func percentile(_ percent: Double) -> Duration {
            guard count > 0 else { return .zero }
            let share = min(100, max(0, percent.isNaN ? 0 : percent)) / 100
            let rank = max(1, UInt64((share * Double(count)).rounded(.up)))
            var seen: UInt64 = 0
            for bucket in buckets {
                seen += bucket.count
                guard seen >= rank else { continue }
                guard bucket.index < DelayHistogram.bucketCount - 1 else { return maximum }
                return min(maximum, .nanoseconds(DelayHistogram.highestValue(inBucket: bucket.index)))
            }
            return maximum
        }

        /// The median delay: ``percentile(_:)`` of 50.
        public var p50: Duration { percentile(50) }
        /// ``percentile(_:)`` of 90.
        public var p90: Duration { percentile(90) }
        /// ``percentile(_:)`` of 99.
        public var p99: Duration { percentile(99) }
        /// ``percentile(_:)`` of 99.9.
        public var p999: Duration { percentile(99.9) }

        /// The figures in one line, e.g. `120 delays: min 52µs, mean 80µs, p50 71µs, p90 102µs, p99 1.3ms, max 12ms`.
        public var description: String {
            func shown(_ duration: Duration) -> String {
                let nanoseconds =
                    duration.components.seconds * 1_000_000_000
                    + duration.components.attoseconds / 1_000_000_000
                if nanoseconds < 10_000 { return "\(nanoseconds)ns" }
                if nanoseconds < 10_000_000 { return "\(nanoseconds / 1_000)µs" }
                return "\(nanoseconds / 1_000_000)ms"
            }
            return "\(count) delays: min \(shown(minimum)), mean \(shown(mean)), p50 \(shown(p50)), "
                + "p90 \(shown(p90)), p99 \(shown(p99)), max \(shown(maximum))"
        }
    }
}
