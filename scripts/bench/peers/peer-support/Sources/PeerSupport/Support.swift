import Glibc

/// The clocks: `CLOCK_MONOTONIC` for every stamp, the process CPU clock for W5.
public enum Clock {
    /// Nanoseconds on `CLOCK_MONOTONIC`.
    @inlinable
    public static func monotonic() -> Int64 { read(CLOCK_MONOTONIC) }

    /// CPU time used by all threads of the process, in nanoseconds.
    @inlinable
    public static func processCPU() -> Int64 { read(CLOCK_PROCESS_CPUTIME_ID) }

    /// Sleeps until `deadline` on `CLOCK_MONOTONIC` (absolute, so a schedule does not drift).
    @inlinable
    public static func sleep(until deadline: Int64) {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }

    @inlinable
    static func read(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}

/// `count` deadline offsets in `range`: splitmix64 from seed 0x5EED, `low + next() % (high - low)`.
public func splitMixOffsets(count: Int, in range: Range<Int64>) -> [Int64] {
    var state: UInt64 = 0x5EED
    return (0..<count).map { _ in
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return range.lowerBound + Int64(z % UInt64(range.upperBound - range.lowerBound))
    }
}

/// The nearest-rank `percent` percentile of ascending `sorted`: the value at rank ⌈p/100·n⌉ (0 when empty).
public func nearestRank(_ percent: Double, of sorted: [Int64]) -> Int64 {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}

/// A count to wait on (pthread mutex + condition variable on `CLOCK_MONOTONIC`), so a waiting thread costs no CPU.
/// From any thread.
public final class Latch: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var count = 0

    /// A latch at 0.
    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(changed, &attributes)
    }

    /// Adds one and wakes the waiters.
    public func add() {
        pthread_mutex_lock(mutex)
        count += 1
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until the count reaches `target`; false after `seconds` without.
    @discardableResult
    public func wait(for target: Int = 1, seconds: Int = 300) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += seconds
        pthread_mutex_lock(mutex)
        var status: Int32 = 0
        while count < target && status != ETIMEDOUT { status = pthread_cond_timedwait(changed, mutex, &deadline) }
        let reached = count >= target
        pthread_mutex_unlock(mutex)
        return reached
    }
}

/// A plain pthread running a closure, for producers and senders. Made in set-up, never timed.
public final class PeerThread: @unchecked Sendable {
    private var thread = pthread_t()

    /// Starts a thread running `body`.
    public init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    /// Waits for the thread to end.
    public func join() {
        pthread_join(thread, nil)
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

/// Glibc's GNU extensions that the Swift Glibc module hides behind `_GNU_SOURCE`, looked up in the loaded C library.
public enum GNU {
    private typealias GetCPU = @convention(c) () -> CInt
    private typealias GetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer?) -> CInt
    private static let getCPU: GetCPU? = symbol("sched_getcpu")
    private static let getAffinity: GetAffinity? = symbol("sched_getaffinity")

    /// The calling thread's CPU (`sched_getcpu`), or -1.
    public static func currentCPU() -> CInt { getCPU?() ?? -1 }

    /// `@cpuN` when the process may run on CPU N only on a machine with several (as loop-bench labels W1@cpu0).
    public static var labelSuffix: String {
        var mask = [UInt8](repeating: 0, count: 128)
        guard let getAffinity, mask.withUnsafeMutableBytes({ getAffinity(0, $0.count, $0.baseAddress) }) == 0 else {
            return ""
        }
        var cpus: [Int] = []
        for byte in mask.indices {
            for bit in 0..<8 where mask[byte] & (1 << bit) != 0 { cpus.append(byte * 8 + bit) }
        }
        guard cpus.count == 1, sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1 else { return "" }
        return "@cpu\(cpus[0])"
    }

    private static func symbol<Function>(_ name: String) -> Function? {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), name) else { return nil }
        return unsafeBitCast(address, to: Function.self)
    }
}

/// `value` with `decimals` decimals and no grouping, as loop-bench prints its machine-readable lines.
public func formatted(_ value: Double, decimals: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var unit: Int64 = 1
    for _ in 0..<decimals { unit *= 10 }
    let total = Int64((abs(value) * Double(unit)).rounded())
    let sign = value < 0 && total != 0 ? "-" : ""
    guard decimals > 0 else { return sign + String(total) }
    let fraction = String(total % unit)
    return sign + String(total / unit) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
}

/// Writes `line` and a newline to standard error.
public func printError(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}
