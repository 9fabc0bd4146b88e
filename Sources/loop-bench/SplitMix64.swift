/// The splitmix64 generator every peer uses for deadline offsets, so all get the same sequence.
///
/// Each workload starts a new generator from ``seed``. A value in `[low, high)` is `low + next() % (high - low)`
/// (the modulo bias is below 10⁻⁹ for the ranges used).
struct SplitMix64 {
    /// The seed of every workload: `0x5EED`.
    static let seed: UInt64 = 0x5EED

    private var state: UInt64

    /// Creates a generator starting from `seed`.
    init(seed: UInt64 = SplitMix64.seed) {
        state = seed
    }

    /// The next 64 random bits.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `[low, high)`.
    mutating func next(in range: Range<Int64>) -> Int64 {
        range.lowerBound + Int64(next() % UInt64(range.upperBound - range.lowerBound))
    }

    /// `count` values in `range`, made before a timed loop so it does not time the generator.
    static func offsets(count: Int, in range: Range<Int64>) -> [Int64] {
        var generator = SplitMix64()
        return (0..<count).map { _ in generator.next(in: range) }
    }
}
