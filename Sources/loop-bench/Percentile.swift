/// Nearest-rank percentiles over a sample, as the peers compute them.
enum Percentile {
    /// The nearest-rank `percent` percentile of `sorted` (ascending): the value at rank ⌈p/100 · n⌉.
    ///
    /// - Parameters:
    ///   - percent: In (0, 100].
    ///   - sorted: The samples, sorted ascending; must not be empty.
    /// - Returns: The sample at that rank.
    static func nearestRank(_ percent: Double, of sorted: [Int64]) -> Int64 {
        precondition(!sorted.isEmpty, "a percentile of no samples")
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// The median of `values` (the mean of the two middle values for an even count), for summarising runs.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
