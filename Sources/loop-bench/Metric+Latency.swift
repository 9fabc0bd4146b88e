extension Metric {
    /// The figures every wake-latency workload reports: the median and 99th percentile of `latencies` (nanoseconds,
    /// sorted), in µs, and process CPU time over wall time, in %.
    static func latencyFigures(sorted latencies: [Int64], cpuNanoseconds: Int64, wallNanoseconds: Int64) -> [Metric] {
        [
            Metric(
                "p50", unit: "µs", key: "p50_us", value: Double(Percentile.nearestRank(50, of: latencies)) / 1e3,
                decimals: 1),
            Metric(
                "p99", unit: "µs", key: "p99_us", value: Double(Percentile.nearestRank(99, of: latencies)) / 1e3,
                decimals: 1),
            Metric(
                "cpu", unit: "%", key: "cpu_pct", value: Double(cpuNanoseconds) / Double(wallNanoseconds) * 100,
                decimals: 1),
        ]
    }
}
