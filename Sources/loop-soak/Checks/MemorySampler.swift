/// The resident set size and malloc's bytes in use, sampled once a second: the memory check fits a straight line to
/// each after the warm-up and judges growth by its slope, extrapolated to an hour, against a budget.
///
/// An end point says little: the resident set steps by whole pages as malloc's arenas grow and shrink, and a leak of a
/// few hundred bytes a second hides in that noise for minutes. A least-squares slope over every sample after the
/// warm-up uses all of them, and a leak shows as a steady positive slope whatever the noise around it.
struct MemorySampler {
    /// How many samples make each median of the report's "after the warm-up" and "at the end" figures.
    static let window = 3
    /// The most malloc's bytes in use may grow per hour, extrapolated from the slope: a leak of 600 bytes a second
    /// (about 2 MiB an hour) fails. Without a leak, the slopes of 168–180 s windows of 10-minute runs (CI samples
    /// 180 s) lie within ±1.1 MiB/h: the samples swing by about 0.1 MiB with what the traffic holds at that second.
    static let heapBudgetPerHour = 2 << 20
    /// The most the resident set may grow per hour, extrapolated from the slope. Looser than the heap's: malloc keeps
    /// freed memory in its arenas and their pages come and go (168–180 s windows of 10-minute runs: up to +2.0 MiB/h
    /// from the 42nd second, about +0.6 from the 120th; Docs/Reliability.md, "Soak").
    static let residentBudgetPerHour = 4 << 20
    /// The fewest seconds of samples after the warm-up for a slope worth judging; a shorter run reports the slopes
    /// without judging them.
    static let minimumSampledSeconds = 60

    /// One sample: the second of the run it was taken at, the resident bytes and malloc's bytes in use.
    struct Sample {
        let second: Int
        let resident: Int
        let heap: Int
    }

    /// Every sample, warm-up included.
    private(set) var samples: [Sample] = []
    /// Samples taken after this second of the run are after the warm-up.
    let warmupSeconds: Int

    /// A sampler whose measurement starts after `warmupSeconds`, for a run of `seconds`.
    init(warmupSeconds: Int, seconds: Int) {
        self.warmupSeconds = warmupSeconds
        // Room for every sample now: an array doubling as it fills would grow the heap it measures, in steps (a
        // 24-byte sample a second is 84 KiB an hour).
        samples.reserveCapacity(seconds + 1)
    }

    /// Adds a sample taken earlier (read back from a samples file).
    mutating func append(_ sample: Sample) {
        samples.append(sample)
    }

    /// Takes a sample at `second` of the run; answers it.
    @discardableResult
    mutating func sample(at second: Int) -> Sample {
        let sample = Sample(second: second, resident: ProcessFigures.residentBytes(), heap: HeapFigures.inUseBytes())
        samples.append(sample)
        return sample
    }

    /// The samples after the warm-up.
    private var measured: ArraySlice<Sample> { samples.drop { $0.second <= warmupSeconds } }

    /// The median resident set of the first ``window`` samples after the warm-up.
    var baseline: Int { measured.prefix(Self.window).map(\.resident).median }
    /// The median resident set of the last ``window`` samples.
    var final: Int { measured.suffix(Self.window).map(\.resident).median }
    /// The median of malloc's bytes in use in the first ``window`` samples after the warm-up.
    var heapBaseline: Int { measured.prefix(Self.window).map(\.heap).median }
    /// The median of malloc's bytes in use in the last ``window`` samples.
    var heapFinal: Int { measured.suffix(Self.window).map(\.heap).median }
    /// The largest resident set, warm-up included.
    var maximum: Int { samples.map(\.resident).max() ?? 0 }
    /// The largest resident set after the warm-up.
    var maximumAfterWarmup: Int { measured.map(\.resident).max() ?? 0 }

    /// The resident set's growth in bytes per hour: the least-squares slope after the warm-up.
    var residentSlopePerHour: Double { Self.slopePerHour(measured.map { ($0.second, $0.resident) }) }
    /// malloc's bytes in use, growth in bytes per hour: the least-squares slope after the warm-up.
    var heapSlopePerHour: Double { Self.slopePerHour(measured.map { ($0.second, $0.heap) }) }
    /// How many seconds the samples after the warm-up span.
    var sampledSeconds: Int { (measured.last?.second ?? 0) - (measured.first?.second ?? 0) }
    /// Whether the run sampled long enough after the warm-up for its slopes to be judged.
    var isLongEnough: Bool { sampledSeconds >= Self.minimumSampledSeconds }
    /// How far a slope may stray from the truth with no leak at all: the samples swing by about 0.1 MiB with what
    /// the traffic holds at that second, so a line through `sampledSeconds` of them may tilt by about 0.25 MiB over
    /// the window (a 3-minute window of a leak-free CI run measured +3.7 MiB/h of heap). That is 5 MiB/h over CI's
    /// 180 s, 1.9 over a 10-minute run's 480 s and 0.3 over an hour: the budgets below are exceeded only by that much
    /// more, so a short window judges only large leaks and a long one small ones.
    var noisePerHour: Double {
        Double(1 << 18) * 3600 / Double(max(sampledSeconds, 1))
    }
    /// The heap budget for this run: ``heapBudgetPerHour`` plus ``noisePerHour``.
    var heapLimitPerHour: Double { Double(Self.heapBudgetPerHour) + noisePerHour }
    /// The resident-set budget for this run: ``residentBudgetPerHour`` plus ``noisePerHour``.
    var residentLimitPerHour: Double { Double(Self.residentBudgetPerHour) + noisePerHour }
    /// Whether both slopes are within their budgets (`false` for a run too short to judge).
    var isWithinBudget: Bool {
        isLongEnough && heapSlopePerHour <= heapLimitPerHour && residentSlopePerHour <= residentLimitPerHour
    }

    /// The slope of the least-squares line through `points` (second, bytes), scaled to an hour; 0 with fewer than two.
    static func slopePerHour(_ points: [(Int, Int)]) -> Double {
        guard points.count >= 2 else { return 0 }
        let count = Double(points.count)
        let meanX = points.reduce(0.0) { $0 + Double($1.0) } / count
        let meanY = points.reduce(0.0) { $0 + Double($1.1) } / count
        var covariance = 0.0
        var variance = 0.0
        for (x, y) in points {
            covariance += (Double(x) - meanX) * (Double(y) - meanY)
            variance += (Double(x) - meanX) * (Double(x) - meanX)
        }
        return variance == 0 ? 0 : covariance / variance * 3600
    }
}
