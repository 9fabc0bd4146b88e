@_exported import CheckSupport  // fail, pass, check, waitFor, Shared…: every file of the tool
import Glibc
import RunLoopKit

/// Median and maximum of `samples` in microseconds, as "label_median_us=… label_max_us=…".
func summary(_ samples: [Int64], _ label: String) -> String {
    let sorted = samples.sorted()
    let median = Double(sorted[sorted.count / 2]) / 1000
    let maximum = Double(sorted.last!) / 1000
    return "\(label)_median_us=\(rounded(median)) \(label)_max_us=\(rounded(maximum))"
}
