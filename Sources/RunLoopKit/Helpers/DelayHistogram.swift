/// Counts of nanosecond values in log-linear buckets (HDR histogram's layout): exact below 32 ns, then 32 buckets per
/// power of two, so a bucket is at most 1/32 (3.1%) as wide as the values in it. Values from 2^42 ns (about 73
/// minutes) on share the last bucket. Memory is fixed when it is made (1,248 counts, about 10 KB); recording a value
/// allocates nothing and takes a few instructions.
///
/// A plain value: its owner serialises access (``LoopDelayMonitor`` keeps it behind a lock).
struct DelayHistogram {
    /// Sub-buckets per power of two, as a power of two: 5 bits, 32 sub-buckets.
    static let subBucketBits = 5
    static let subBuckets = 1 << subBucketBits
    /// The largest power of two with buckets of its own; larger values go to the last bucket.
    static let largestExponent = 42
    /// The number of buckets: the exact ones below ``subBuckets``, then ``subBuckets`` per power of two.
    static let bucketCount = (largestExponent - subBucketBits + 2) * subBuckets

    /// The count of values per bucket; ``bucketCount`` long, allocated once.
    private(set) var counts = [UInt64](repeating: 0, count: DelayHistogram.bucketCount)
    /// Values recorded.
    private(set) var count = 0
    /// Their sum, in nanoseconds.
    private(set) var sum: Int64 = 0
    /// The smallest and largest value recorded (exact, not bucketed); `.max` and 0 while empty.
    private(set) var minimum: Int64 = .max
    private(set) var maximum: Int64 = 0

    /// Adds one value, in nanoseconds (a negative one counts as 0).
    @inline(__always)
    mutating func record(_ nanoseconds: Int64) {
        let value = max(0, nanoseconds)
        counts[Self.bucket(of: value)] &+= 1
        count &+= 1
        sum &+= value
        if value < minimum { minimum = value }
        if value > maximum { maximum = value }
    }

    /// Adds `count` values to `bucket` without their figures: for a copy of counts kept elsewhere
    /// (``HandOverRecorder``), whose sum and extremes ``setExtremes(sum:minimum:maximum:)`` then sets.
    mutating func add(_ count: UInt64, inBucket bucket: Int) {
        counts[bucket] &+= count
        self.count &+= Int(count)
    }

    /// Sets the sum and extremes of values added by ``add(_:inBucket:)``; the extremes are kept within what the
    /// buckets hold (a copy read while its values were being written may lag them by a value). No-op when empty.
    mutating func setExtremes(sum: Int64, minimum: Int64, maximum: Int64) {
        guard count > 0 else { return }
        let lowest = counts.firstIndex { $0 > 0 }!
        let highest = counts.lastIndex { $0 > 0 }!
        self.sum = sum
        self.minimum = Swift.min(Swift.max(minimum, lowestValue(inBucket: lowest)), Self.highestValue(inBucket: lowest))
        self.maximum = Swift.max(maximum, lowestValue(inBucket: highest))
    }

    /// The smallest value counted in `bucket`.
    private func lowestValue(inBucket bucket: Int) -> Int64 {
        guard bucket >= Self.subBuckets else { return Int64(bucket) }
        let shift = bucket / Self.subBuckets - 1
        return Int64(Self.subBuckets + bucket % Self.subBuckets) << shift
    }

    /// Forgets every value; keeps the buckets' memory.
    mutating func reset() {
        for index in counts.indices { counts[index] = 0 }
        count = 0
        sum = 0
        minimum = .max
        maximum = 0
    }

    /// The bucket `value` (at least 0) is counted in.
    @inline(__always)
    static func bucket(of value: Int64) -> Int {
        let bits = UInt64(value)
        guard bits >= UInt64(subBuckets) else { return Int(bits) }
        let exponent = 63 - bits.leadingZeroBitCount  // floor(log2(value)), at least subBucketBits
        guard exponent <= largestExponent else { return bucketCount - 1 }
        let group = exponent - subBucketBits + 1
        let mantissa = Int(bits >> UInt64(exponent - subBucketBits)) - subBuckets
        return group * subBuckets + mantissa
    }

    /// The largest value counted in `bucket`: what a percentile that falls in it reports (never below the values
    /// counted there). The last bucket's is unbounded: callers report the exact maximum for it.
    static func highestValue(inBucket bucket: Int) -> Int64 {
        guard bucket >= subBuckets else { return Int64(bucket) }
        let shift = bucket / subBuckets - 1
        let lowest = Int64(subBuckets + bucket % subBuckets) << shift
        return lowest + (Int64(1) << shift) - 1
    }
}
