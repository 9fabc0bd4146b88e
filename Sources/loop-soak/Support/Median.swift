extension Array where Element == Int {
    /// The middle value once sorted (the upper of the two middle ones for an even count), 0 for no values: what
    /// the report's memory figures sum a window of samples up with, so that a burst of traffic in flight does not
    /// move them.
    var median: Int {
        guard !isEmpty else { return 0 }
        return sorted()[count / 2]
    }
}
