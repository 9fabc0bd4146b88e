/// Runs one workload `runs` times and collects its metrics and phase times.
///
/// Each run is a fresh process (``ChildRun``), as the peers are run, unless `inProcess`: then every run is a fresh
/// instance in this process (for valgrind and callgrind, which would otherwise have to follow the children).
struct Runner {
    /// What one workload gave over all its runs.
    struct Outcome {
        /// The workload's name as printed, e.g. `ping-pong` or `ping-pong@cpu0` (the machine-readable lines'
        /// first field).
        let label: String
        /// The workload's id with the same suffix, e.g. `W1` or `W1@cpu0`, which the table prints after the name.
        let idLabel: String
        /// One array of metrics per run, same order in each.
        let runs: [[Metric]]
        /// Median setUp, run and tearDown times in milliseconds.
        let phases: (setUp: Double, run: Double, tearDown: Double)

        /// The metrics that must be 0 but were not in some run, as "name=value (run k)": the workload failed,
        /// though its figures are still reported.
        var violations: [String] {
            runs.enumerated().flatMap { index, metrics in
                metrics.filter { $0.mustBeZero && $0.value != 0 }.map {
                    "\($0.name)=\(Int($0.value)) (run \(index + 1))"
                }
            }
        }
    }

    let runs: Int
    let scale: Int
    /// Whether the runs share this process instead of each getting a fresh one.
    let inProcess: Bool
    /// Appended to each name (and id) when the process is pinned to one CPU (`taskset -c 0` gives `@cpu0`).
    let labelSuffix: String

    /// Runs `workload`; answers its outcome, or throws the first failure.
    func run(_ workload: any Benchmark.Type) throws -> Outcome {
        var results: [[Metric]] = []
        var setUpTimes: [Double] = []
        var runTimes: [Double] = []
        var tearDownTimes: [Double] = []
        let label = workload.name + labelSuffix
        let idLabel = workload.id + labelSuffix
        for index in 1...runs {
            Report.progress(
                "\(label) (\(idLabel)), \(workload.title): run \(index)/\(runs)\(inProcess ? " (in process)" : "")")
            let (metrics, phases) =
                inProcess
                ? try Self.runOnce(workload, scale: scale)
                : try ChildRun.run(workload: workload.name, quick: scale != 1)
            results.append(metrics)
            setUpTimes.append(phases.setUp)
            runTimes.append(phases.run)
            tearDownTimes.append(phases.tearDown)
        }
        return Outcome(
            label: label,
            idLabel: idLabel,
            runs: results,
            phases: (Percentile.median(setUpTimes), Percentile.median(runTimes), Percentile.median(tearDownTimes))
        )
    }

    /// Runs `workload` once in this process, on a fresh instance: answers its metrics and its phase times in ms.
    static func runOnce(
        _ workload: any Benchmark.Type, scale: Int
    ) throws -> (metrics: [Metric], phases: (setUp: Double, run: Double, tearDown: Double)) {
        let benchmark = workload.init(scale: scale)
        let t0 = Clock.monotonic()
        try benchmark.setUp()
        let t1 = Clock.monotonic()
        let metrics: [Metric]
        do {
            metrics = try benchmark.run()
        } catch {
            benchmark.tearDown()
            throw error
        }
        let t2 = Clock.monotonic()
        benchmark.tearDown()
        let t3 = Clock.monotonic()
        return (metrics, (Double(t1 - t0) / 1e6, Double(t2 - t1) / 1e6, Double(t3 - t2) / 1e6))
    }
}
