import SplitMix64

extension SplitMix64 {
    /// Whether an event of probability `1 / n` happens.
    mutating func oneIn(_ n: Int) -> Bool {
        Int.random(in: 0..<n, using: &self) == 0
    }
}
