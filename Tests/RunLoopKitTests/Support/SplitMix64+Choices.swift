import SplitMix64

/// The choices the model test, the stress tests and the timer-heap tests draw from a seeded generator.
extension SplitMix64 {
    /// A number in `0..<bound`.
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    /// True with probability `percent`/100.
    mutating func chance(_ percent: Int) -> Bool {
        below(100) < percent
    }

    /// One of `values`.
    mutating func pick<T>(_ values: [T]) -> T {
        values[below(values.count)]
    }
}
