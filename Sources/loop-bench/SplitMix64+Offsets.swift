import SplitMix64

/// Deadline offsets: every peer uses splitmix64 with the same seed, so all get the same sequence.
///
/// Each workload starts a new generator from ``seed``. A value in `[low, high)` is `low + next() % (high - low)`
/// (the modulo bias is below 10⁻⁹ for the ranges used).
extension SplitMix64 {
    /// The seed of every workload: `0x5EED`.
    static let seed: UInt64 = 0x5EED

    /// A value in `[low, high)`.
    mutating func next(in range: Range<Int64>) -> Int64 {
        range.lowerBound + Int64(next() % UInt64(range.upperBound - range.lowerBound))
    }

    /// `count` values in `range`, made before a timed loop so it does not time the generator.
    static func offsets(count: Int, in range: Range<Int64>) -> [Int64] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in generator.next(in: range) }
    }
}
