@_exported import CheckSupport  // fail, pass, check, waitFor, Shared…: every file of the tool
import Foundation
import RunLoopKit
import Synchronization

/// Seconds on the monotonic clock.
func uptime() -> Double { ProcessInfo.processInfo.systemUptime }

/// The CPU time (user + system) the whole process has used, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Runs Foundation's run loop on the main thread until `done` holds, for at most 10 s; fails the scenario otherwise.
func runFoundation(until what: String, _ done: () -> Bool) {
    let deadline = uptime() + 10
    while !done() {
        if uptime() > deadline { fail("\(what) did not happen within 10 s under RunLoop.main") }
        _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.5))
    }
}

/// Runs `Loop.main` until `done` holds, for at most 10 s; fails the scenario otherwise.
func runLoop(until what: String, _ done: @escaping @Sendable () -> Bool) {
    let deadline = uptime() + 10
    while !done() {
        if uptime() > deadline { fail("\(what) did not happen within 10 s under Loop.main") }
        Loop.main.run(in: .default, for: .milliseconds(500))
    }
}

/// A counter shared between threads.
final class Count: Sendable {
    private let value = Atomic<Int>(0)
    func add() { value.add(1, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

/// Median and 99th percentile of `samples` (seconds) in microseconds, as "label_median_us=… label_p99_us=…".
func summary(_ samples: [Double], _ label: String) -> String {
    let sorted = samples.sorted()
    func microseconds(_ value: Double) -> Double { (value * 1e7).rounded() / 10 }
    let median = microseconds(sorted[sorted.count / 2])
    let p99 = microseconds(sorted[min(sorted.count - 1, sorted.count * 99 / 100)])
    return "\(label)_median_us=\(median) \(label)_p99_us=\(p99)"
}

/// A pipe whose ends are non-blocking and close-on-exec.
struct TestPipe {
    let readEnd: Int32
    let writeEnd: Int32
    /// A blocking read end for Foundation's `FileHandle`, which reads in a thread of its own.
    init(nonBlocking: Bool = true) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fail("pipe: errno \(errno)") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            if nonBlocking { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
        }
        (readEnd, writeEnd) = (ends[0], ends[1])
    }
    func write(_ bytes: [UInt8]) {
        guard Glibc.write(writeEnd, bytes, bytes.count) == bytes.count else { fail("write: errno \(errno)") }
    }
}
