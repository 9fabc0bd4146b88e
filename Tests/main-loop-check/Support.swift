@_exported import CheckSupport  // fail, pass, check, waitFor, Shared…: every file of the tool
import Dispatch
import Glibc
import RunLoopKit

/// Waits on the calling (non-main) thread until the main loop sleeps in `epoll_wait`, for at most 10 s.
func waitUntilMainLoopSleeps() {
    let deadline = nowNanoseconds() + 10_000_000_000
    while !Loop.main.isWaiting {
        if nowNanoseconds() > deadline { fail("the main loop never went to sleep") }
        usleep(100)
    }
}

/// Median and maximum of `samples` in microseconds, as "median_us=… max_us=…".
func summary(_ samples: [Int64], _ label: String) -> String {
    let sorted = samples.sorted()
    let median = Double(sorted[sorted.count / 2]) / 1000
    let maximum = Double(sorted.last!) / 1000
    return "\(label)_median_us=\(rounded(median)) \(label)_max_us=\(rounded(maximum)) samples=\(samples.count)"
}
