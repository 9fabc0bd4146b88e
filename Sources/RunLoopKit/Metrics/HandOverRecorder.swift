import RunLoopKitSystem
import Synchronization

/// The hand-over latencies of one loop (``Loop/enableHandOverLatencies()``): one log-linear histogram per kind of
/// work, laid out as ``DelayHistogram``'s, in cells the loop's thread writes and any thread reads.
///
/// Threading: ``record(_:_:)`` on the loop's thread only, the single writer, so a value costs relaxed loads and
/// stores (plain moves on x86-64, no locked instruction and no lock); ``distribution(of:)`` from any thread. A
/// reader that overlaps a write may see a bucket counted before the count and sum, or after: the figures of one
/// snapshot can disagree by the values recorded while it was read, never by more. Allocated once, when enabled.
final class HandOverRecorder: Sendable {
    /// The kinds of work, as the row of each histogram.
    enum Kind: Int, CaseIterable {
        case block = 0
        case job
        case mainQueue
        case timer
        case descriptor
    }

    /// Per kind: ``DelayHistogram/bucketCount`` bucket counts, then the count, the sum, the minimum, the maximum.
    private static let cellsPerKind = DelayHistogram.bucketCount + 4
    private nonisolated(unsafe) let cells: UnsafeMutablePointer<Atomic<Int64>>

    init() {
        let total = Self.cellsPerKind * Kind.allCases.count
        cells = .allocate(capacity: total)
        for index in 0..<total { (cells + index).initialize(to: Atomic<Int64>(0)) }
        for kind in Kind.allCases { cells[Self.minimumCell(kind)].store(.max, ordering: .relaxed) }
    }

    deinit {
        cells.deinitialize(count: Self.cellsPerKind * Kind.allCases.count)
        cells.deallocate()
    }

    private static func base(_ kind: Kind) -> Int { kind.rawValue * cellsPerKind }
    private static func countCell(_ kind: Kind) -> Int { base(kind) + DelayHistogram.bucketCount }
    private static func sumCell(_ kind: Kind) -> Int { countCell(kind) + 1 }
    private static func minimumCell(_ kind: Kind) -> Int { countCell(kind) + 2 }
    private static func maximumCell(_ kind: Kind) -> Int { countCell(kind) + 3 }

    /// Adds one value of `kind`, in nanoseconds (a negative one counts as 0). Loop thread only.
    @inline(__always)
    func record(_ kind: Kind, _ nanoseconds: Int64) {
        let value = max(0, nanoseconds)
        Self.add(1, to: cells[Self.base(kind) + DelayHistogram.bucket(of: value)])
        Self.add(1, to: cells[Self.countCell(kind)])
        Self.add(value, to: cells[Self.sumCell(kind)])
        let minimum = Self.minimumCell(kind)
        if value < cells[minimum].load(ordering: .relaxed) { cells[minimum].store(value, ordering: .relaxed) }
        let maximum = Self.maximumCell(kind)
        if value > cells[maximum].load(ordering: .relaxed) { cells[maximum].store(value, ordering: .relaxed) }
    }

    /// Forgets every value of every kind. Loop thread only (the single writer): a reader may see part of it.
    func reset() {
        for index in 0..<Self.cellsPerKind * Kind.allCases.count { cells[index].store(0, ordering: .relaxed) }
        for kind in Kind.allCases { cells[Self.minimumCell(kind)].store(.max, ordering: .relaxed) }
    }

    /// The single writer's update: a relaxed load and store.
    @inline(__always)
    private static func add(_ amount: Int64, to cell: borrowing Atomic<Int64>) {
        cell.store(cell.load(ordering: .relaxed) &+ amount, ordering: .relaxed)
    }

    /// A snapshot of `kind`'s histogram. Any thread; allocates the snapshot.
    func distribution(of kind: Kind) -> LoopDelayMonitor.Distribution {
        var histogram = DelayHistogram()
        let base = Self.base(kind)
        for bucket in 0..<DelayHistogram.bucketCount {
            let count = cells[base + bucket].load(ordering: .relaxed)
            if count > 0 { histogram.add(UInt64(count), inBucket: bucket) }
        }
        histogram.setExtremes(
            sum: cells[Self.sumCell(kind)].load(ordering: .relaxed),
            minimum: cells[Self.minimumCell(kind)].load(ordering: .relaxed),
            maximum: cells[Self.maximumCell(kind)].load(ordering: .relaxed))
        return LoopDelayMonitor.Distribution(histogram)
    }
}
