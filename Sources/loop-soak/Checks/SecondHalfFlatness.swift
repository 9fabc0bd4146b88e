/// Whether malloc's bytes in use stopped growing: the judgement of a long soak's second half (issue 42).
///
/// A budget on the slope over the whole run lets a slow, steady climb pass: +1.5 MiB/h is inside a 2 MiB/h budget,
/// and it is a gigabyte a month. A heap that holds only what the traffic needs levels off once every pool, cache and
/// arena has reached its working size, so the question for a long run is whether the *second half* still climbs.
///
/// The second half (the samples after half the run, and after the warm-up) is cut into blocks of ``blockSeconds``,
/// each summed up by its median: a block's median ignores the bursts the traffic holds for a second, and leaves the
/// level the heap sits at. A least-squares line through the block medians gives the slope, and the medians' scatter
/// around that line gives the slope's standard error. The half is flat when its slope is no more than
/// ``errorsAllowed`` standard errors (a slope that size comes from the scatter alone about once in a hundred runs),
/// or no more than ``floorPerHour`` (growth too slow to tell from an allocator settling, 6 MiB a day), whichever is
/// larger. A climb of a leak stands far outside its own scatter: the issue's +1.5 MiB/h had block medians on a
/// straight line.
///
/// Judged only when the second half holds at least ``minimumBlocks`` blocks (20 minutes): CI's 300 s run reports the
/// slope budget of ``MemorySampler`` alone, which catches fast leaks and says nothing about slow ones.
struct SecondHalfFlatness {
    /// The length of a block, in seconds: five minutes, as the soak's memory table prints them.
    static let blockSeconds = 300
    /// The fewest blocks for a judgement: four, with two degrees of freedom left for the scatter.
    static let minimumBlocks = 4
    /// How many standard errors a flat half's slope may reach.
    static let errorsAllowed = 3.0
    /// The slope below which growth is not judged, in bytes per hour: 0.25 MiB/h.
    static let floorPerHour = Double(1 << 18)

    /// One block: its first second, and the median of malloc's bytes in use over it.
    struct Block {
        let startSecond: Int
        let medianHeap: Int
    }

    /// The second half's blocks, oldest first (a last block shorter than ``blockSeconds`` is left out).
    let blocks: [Block]

    /// The second half of `samples`, for a run of `seconds` with `warmupSeconds` of warm-up, cut into blocks.
    init(samples: [MemorySampler.Sample], seconds: Int, warmupSeconds: Int) {
        let start = max(seconds / 2, warmupSeconds)
        var blocks: [Block] = []
        var blockStart = start
        while blockStart + Self.blockSeconds <= seconds {
            let heaps = samples.filter { $0.second > blockStart && $0.second <= blockStart + Self.blockSeconds }
                .map(\.heap)
            if !heaps.isEmpty { blocks.append(Block(startSecond: blockStart, medianHeap: heaps.median)) }
            blockStart += Self.blockSeconds
        }
        self.blocks = blocks
    }

    /// Whether there are enough blocks to judge.
    var isJudged: Bool { blocks.count >= Self.minimumBlocks }

    /// The seconds the judged blocks span.
    var spanSeconds: Int { blocks.count * Self.blockSeconds }

    /// The points of the fit: each block's middle second and its median.
    private var points: [(x: Double, y: Double)] {
        blocks.map { (Double($0.startSecond + Self.blockSeconds / 2), Double($0.medianHeap)) }
    }

    /// The slope of the block medians, in bytes per hour (0 with fewer than two blocks).
    var slopePerHour: Double { fit.slope * 3600 }

    /// The standard error of ``slopePerHour``, in bytes per hour: the medians' scatter around the line (with two
    /// degrees of freedom taken by the line) over their spread in time.
    var standardErrorPerHour: Double { fit.standardError * 3600 }

    /// The largest slope a flat half may show, in bytes per hour.
    var limitPerHour: Double { max(Self.errorsAllowed * standardErrorPerHour, Self.floorPerHour) }

    /// Whether the second half is flat (`true` when not judged, which the report says).
    var isFlat: Bool { !isJudged || slopePerHour <= limitPerHour }

    private var fit: (slope: Double, standardError: Double) {
        let points = self.points
        guard points.count >= 2 else { return (0, 0) }
        let count = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / count
        let meanY = points.reduce(0) { $0 + $1.y } / count
        let spread = points.reduce(0) { $0 + ($1.x - meanX) * ($1.x - meanX) }
        let slope = points.reduce(0) { $0 + ($1.x - meanX) * ($1.y - meanY) } / spread
        guard points.count > 2 else { return (slope, 0) }
        let residuals = points.reduce(0) { total, point in
            let residual = point.y - (meanY + slope * (point.x - meanX))
            return total + residual * residual
        }
        return (slope, (residuals / (count - 2) / spread).squareRoot())
    }
}
