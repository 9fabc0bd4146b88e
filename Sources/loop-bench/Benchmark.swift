/// One workload of the benchmark suite, run in three phases so that only the workload itself is timed.
///
/// A fresh instance is made for every run. ``setUp()`` creates threads, loops and buffers (never timed);
/// ``run()`` performs the workload, timing it with `CLOCK_MONOTONIC`, and answers its metrics;
/// ``tearDown()`` stops and joins the threads. The runner times the three phases separately and reports
/// the median of each metric over the runs.
///
/// Threading: the runner calls all three methods on the main thread, in order.
protocol Benchmark: AnyObject {
    /// The workload's name, which says what it measures, e.g. `ping-pong`: what the command line takes and the
    /// output prints (lower-case words joined by hyphens).
    static var name: String { get }
    /// The workload's short id in Docs/Benchmarks.md and the shared benchmarks.md, e.g. `W1`: the command line
    /// takes it too, and the table prints it after the name.
    static var id: String { get }
    /// A few words saying what the workload does (for `--help` and the progress lines).
    static var title: String { get }

    /// Creates the instance for one run; `scale` divides the workload's sizes (10 for `--quick`).
    init(scale: Int)

    /// Prepares everything the run needs: threads, loops, buffers, random offsets. Not timed.
    func setUp() throws

    /// Performs the workload once and answers its metrics.
    ///
    /// - Returns: The metrics, always the same ones in the same order.
    /// - Throws: ``BenchmarkFailure`` when the workload did not do exactly what it should (a lost closure,
    ///   an early timer, a time-out).
    func run() throws -> [Metric]

    /// Stops and joins the threads made by ``setUp()`` and frees its buffers. Not timed.
    func tearDown()
}

/// A workload that did not complete as defined, so its figures must not be used.
struct BenchmarkFailure: Error, CustomStringConvertible {
    /// What went wrong.
    let description: String

    /// Creates a failure with a message.
    init(_ description: String) {
        self.description = description
    }
}

/// One figure a workload reports, e.g. W3's `schedule` in ns.
struct Metric {
    /// The metric's name in Docs/Benchmarks.md, e.g. `late_p99`.
    let name: String
    /// Its unit as printed in the table, e.g. `µs`.
    let unit: String
    /// The key of the machine-readable line, e.g. `late_p99_us`.
    let key: String
    /// The value.
    let value: Double
    /// How many decimals to print.
    let decimals: Int
    /// Whether any other value than 0 fails the workload (after it is reported), e.g. W3's `early`.
    let mustBeZero: Bool

    /// Creates a metric.
    init(_ name: String, unit: String, key: String, value: Double, decimals: Int, mustBeZero: Bool = false) {
        self.name = name
        self.unit = unit
        self.key = key
        self.value = value
        self.decimals = decimals
        self.mustBeZero = mustBeZero
    }
}
