// What the check executables (glib-check, main-loop-check, foundation-check) share: each runs one scenario per
// process on the real main thread and ends with one verdict line, "PASS <scenario> <figures>" (exit 0) or
// "FAIL <scenario>: <why>" (exit 1), which Tests/RunLoopKitTests reads (CheckScenario).
import Glibc
import RunLoopKit
import RunLoopKitSystem

/// Runs the scenario the process's one argument names, on the main thread; prints the usage and exits 2 for any
/// other argument list, and fails when not on the main thread.
public func runScenario(of tool: String, from scenarios: [String: () -> Void]) {
    let arguments = CommandLine.arguments.dropFirst()
    guard arguments.count == 1, let name = arguments.first, let scenario = scenarios[name] else {
        print("usage: \(tool) <scenario>; scenarios: \(scenarios.keys.sorted().joined(separator: ", "))")
        exit(2)
    }
    guard Loop.main.isCurrent else { fail("not on the main thread") }
    scenario()
}

/// Prints the verdict line and ends the process with status 1.
public func fail(_ why: String, scenario: String = CommandLine.arguments.last ?? "?") -> Never {
    print("FAIL \(scenario): \(why)")
    exit(1)
}

/// Prints the verdict line with `figures` and ends the process with status 0.
public func pass(_ figures: String = "", scenario: String = CommandLine.arguments.last ?? "?") -> Never {
    print("PASS \(scenario) \(figures)")
    exit(0)
}

/// Fails the scenario with `why` unless `condition` holds.
public func check(_ condition: Bool, _ why: @autoclosure () -> String) {
    if !condition { fail(why()) }
}

/// Whether the calling thread is the process's main thread.
public var onMainThread: Bool { Loop.main.isCurrent }

/// Monotonic nanoseconds.
public func nowNanoseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// The CPU time (user + system) the whole process has used, in nanoseconds (`getrusage(RUSAGE_SELF)`).
public func processCPUNanoseconds() -> Int64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func nanoseconds(_ time: timeval) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_usec) * 1000 }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

/// The CPU time (user + system) the calling thread has used, in nanoseconds.
public func threadCPUNanoseconds() -> Int64 { cpuNanoseconds(on: CLOCK_THREAD_CPUTIME_ID) }

/// The CPU clock of the calling thread, which any thread may read (``cpuNanoseconds(on:)``).
public func callingThreadCPUClock() -> clockid_t {
    var clock = clockid_t()
    precondition(pthread_getcpuclockid(pthread_self(), &clock) == 0, "pthread_getcpuclockid failed")
    return clock
}

/// What a CPU clock (a thread's or the process's) reads, in nanoseconds.
public func cpuNanoseconds(on clock: clockid_t) -> Int64 {
    var time = timespec()
    precondition(clock_gettime(clock, &time) == 0, "clock_gettime(\(clock)) failed: errno \(errno)")
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// Whether this process runs under ThreadSanitizer or AddressSanitizer. Their runtimes keep a background thread of
/// their own busy (ThreadSanitizer's wakes every 100 ms to flush shadow memory), so the process's CPU then says more
/// about the sanitizer than about the loop.
public let underSanitizer = dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil

/// The share of one CPU an idle process may use: 1%, or 5% under a sanitizer. The idle thread's own share is held
/// to 1% in every build.
public let idleProcessCPUPercentLimit: Double = underSanitizer ? 5 : 1

/// Fails the scenario unless an idle second cost the idle thread under 10 ms of CPU (1%) and the process under
/// ``idleProcessCPUPercentLimit``; answers both figures for the verdict line.
public func checkIdleSecond(processCPU: Int64, threadCPU: Int64) -> String {
    check(threadCPU < 10_000_000, "the main thread used \(Double(threadCPU) / 1e6) ms of CPU in an idle second")
    check(
        Double(processCPU) < idleProcessCPUPercentLimit * 1e7,
        "the process used \(Double(processCPU) / 1e6) ms of CPU in an idle second")
    return "idle_cpu_ms=\(rounded(Double(processCPU) / 1e6)) main_thread_cpu_ms=\(rounded(Double(threadCPU) / 1e6))"
}

/// Waits on the calling (non-main) thread until `condition` holds, for at most 10 s; fails the scenario otherwise.
public func waitFor(_ what: String, _ condition: () -> Bool) {
    let deadline = nowNanoseconds() + 10_000_000_000
    while !condition() {
        if nowNanoseconds() > deadline { fail("\(what) did not happen within 10 s") }
        usleep(100)
    }
}

/// `value` rounded to one decimal, for figures.
public func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }

/// A value shared between the main thread and others, behind the library's pthread mutex (`Locked`), whose order
/// ThreadSanitizer sees (it does not see `Synchronization.Mutex`'s).
public final class Shared<Value: Sendable>: Sendable {
    private let storage: Locked<Value>
    /// A shared `value`.
    public init(_ value: Value) { storage = Locked(value) }
    /// Runs `body` with exclusive access to the value.
    public func withLock<R>(_ body: (inout Value) -> R) -> R { storage.withLock(body) }
    /// The value now.
    public var value: Value { withLock { $0 } }
}
