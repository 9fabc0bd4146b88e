/// splitmix64 (Steele, Lea and Flood, 2014): a tiny, fast, seedable, well-mixed random number generator.
///
/// Shared by the benchmark (every peer draws the same deadline offsets), the soak (a run's choices follow from its
/// seed) and the tests (a failing sequence replays exactly). Not part of the library: no product exports it.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    @usableFromInline var state: UInt64

    /// A generator starting from `seed`.
    @inlinable
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
