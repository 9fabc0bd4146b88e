/// The resident set size, sampled once a second: the memory check compares the steady state just after the
/// warm-up with the steady state at the end. malloc's bytes in use are sampled with it, to tell a leak from
/// fragmentation when the resident set moves.
struct MemorySampler {
    /// How many samples make each median.
    static let window = 3
    /// The largest change allowed between the two medians.
    static let allowedChange = 0.05

    /// Every sample: the second of the run it was taken at, the resident bytes and malloc's bytes in use.
    private(set) var samples: [(second: Int, bytes: Int, heap: Int)] = []
    /// Samples taken after this second of the run are after the warm-up.
    let warmupSeconds: Int

    /// A sampler whose measurement starts after `warmupSeconds`.
    init(warmupSeconds: Int) {
        self.warmupSeconds = warmupSeconds
    }

    /// Takes a sample at `second` of the run.
    mutating func sample(at second: Int) {
        samples.append((second, ProcessFigures.residentBytes(), HeapFigures.inUseBytes()))
    }

    /// The samples after the warm-up.
    private var measured: [Int] { samples.filter { $0.second > warmupSeconds }.map(\.bytes) }
    /// malloc's bytes in use after the warm-up.
    private var measuredHeap: [Int] { samples.filter { $0.second > warmupSeconds }.map(\.heap) }

    /// The median of the first ``window`` samples after the warm-up.
    var baseline: Int { Self.median(Array(measured.prefix(Self.window))) }
    /// The median of the last ``window`` samples.
    var final: Int { Self.median(Array(measured.suffix(Self.window))) }
    /// The median of malloc's bytes in use in the first ``window`` samples after the warm-up.
    var heapBaseline: Int { Self.median(Array(measuredHeap.prefix(Self.window))) }
    /// The median of malloc's bytes in use in the last ``window`` samples.
    var heapFinal: Int { Self.median(Array(measuredHeap.suffix(Self.window))) }
    /// The largest sample, warm-up included.
    var maximum: Int { samples.map(\.bytes).max() ?? 0 }
    /// The largest sample after the warm-up.
    var maximumAfterWarmup: Int { measured.max() ?? 0 }
    /// The change from ``baseline`` to ``final``, as a fraction of the baseline.
    var change: Double { baseline == 0 ? 0 : Double(final - baseline) / Double(baseline) }
    /// Whether the end is within ``allowedChange`` of the start, with enough samples to tell.
    var isFlat: Bool { measured.count >= 2 * Self.window && abs(change) <= Self.allowedChange }

    private static func median(_ values: [Int]) -> Int {
        guard !values.isEmpty else { return 0 }
        return values.sorted()[values.count / 2]
    }
}
