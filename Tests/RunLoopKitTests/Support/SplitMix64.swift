/// splitmix64 (Steele, Lea, Flood 2014): a tiny, seedable, well-mixed PRNG, so a failing sequence replays exactly.
/// Shared by the model test, the stress tests and the timer-heap tests.
struct SplitMix64: RandomNumberGenerator {
    private(set) var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`.
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    /// True with probability `percent`/100.
    mutating func chance(_ percent: Int) -> Bool {
        below(100) < percent
    }

    mutating func pick<T>(_ values: [T]) -> T {
        values[below(values.count)]
    }
}
