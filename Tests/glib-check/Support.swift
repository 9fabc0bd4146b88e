import Glibc
import RunLoopKit
import Synchronization

/// Prints the verdict line and ends the process with status 1.
func fail(_ why: String, scenario: String = CommandLine.arguments.last ?? "?") -> Never {
    print("FAIL \(scenario): \(why)")
    exit(1)
}

/// Prints the verdict line with `figures` and ends the process with status 0.
func pass(_ figures: String = "", scenario: String = CommandLine.arguments.last ?? "?") -> Never {
    print("PASS \(scenario) \(figures)")
    exit(0)
}

func check(_ condition: Bool, _ why: @autoclosure () -> String) {
    if !condition { fail(why()) }
}

/// Whether the calling thread is the process's main thread.
var onMainThread: Bool { Loop.main.isCurrent }

/// Monotonic nanoseconds.
func nowNanoseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// The CPU time (user + system) the whole process has used, in nanoseconds (`getrusage(RUSAGE_SELF)`).
func processCPUNanoseconds() -> Int64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func nanoseconds(_ time: timeval) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_usec) * 1000 }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

/// Waits on the calling (non-main) thread until `condition` holds, for at most 10 s; fails the scenario otherwise.
func waitFor(_ what: String, _ condition: () -> Bool) {
    let deadline = nowNanoseconds() + 10_000_000_000
    while !condition() {
        if nowNanoseconds() > deadline { fail("\(what) did not happen within 10 s") }
        usleep(100)
    }
}

/// Median and maximum of `samples` in microseconds, as "label_median_us=… label_max_us=…".
func summary(_ samples: [Int64], _ label: String) -> String {
    let sorted = samples.sorted()
    let median = Double(sorted[sorted.count / 2]) / 1000
    let maximum = Double(sorted.last!) / 1000
    return "\(label)_median_us=\(rounded(median)) \(label)_max_us=\(rounded(maximum))"
}

func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }

/// A value shared between the main thread and others, behind a mutex.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    func withLock<R>(_ body: (inout sending Value) -> sending R) -> R { storage.withLock(body) }
    var value: Value { storage.withLock { $0 } }
}
