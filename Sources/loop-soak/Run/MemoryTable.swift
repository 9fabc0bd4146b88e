/// The report's memory table: the resident set and malloc's bytes in use, each a median over a five-minute row, so a
/// long run's memory reads as a curve (a climb, or a level) rather than two end points.
enum MemoryTable {
    /// The length of a row, in seconds.
    static let rowSeconds = 300

    /// Prints one row per whole ``rowSeconds`` of `samples`, warm-up included.
    static func print(_ samples: [MemorySampler.Sample]) {
        Swift.print("  minutes    RSS (MiB)   malloc in use (MiB)")
        guard let last = samples.last?.second else { return }
        var rowStart = 0
        while rowStart + rowSeconds <= last {
            let row = samples.filter { $0.second > rowStart && $0.second <= rowStart + rowSeconds }
            if !row.isEmpty {
                let minutes = "\(rowStart / 60)–\((rowStart + rowSeconds) / 60)"
                Swift.print(
                    "  " + Format.left(minutes, 9)
                        + Format.right(Format.decimal(Double(row.map(\.resident).median) / 1_048_576, 2), 11)
                        + Format.right(Format.decimal(Double(row.map(\.heap).median) / 1_048_576, 3), 22))
            }
            rowStart += rowSeconds
        }
    }
}
