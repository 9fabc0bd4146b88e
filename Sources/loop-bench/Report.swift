import Glibc

/// Prints the results: a readable table on stdout as workloads finish, each workload's name with its id after it,
/// then one `NAME key value` line per metric (e.g. `timer-firing schedule_ns 123.4`) for scripts. Progress goes to
/// stderr.
enum Report {
    private static let columns = (workload: 38, metric: 17, unit: 6, value: 12)

    /// Prints the header: what ran, where, how.
    static func header(options: Options, labelSuffix: String) {
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let machine = withUnsafeBytes(of: &name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        print("# loop-bench: RunLoopKit workloads (Docs/Benchmarks.md)")
        print(
            "# runs \(options.runs) (median shown), "
                + (options.inProcess ? "all in this process (--in-process)" : "each in a fresh process")
                + (options.quick ? ", --quick: sizes / 10" : ""))
        print(
            "# kernel \(kernel) \(machine), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs online, "
                + "affinity \(Affinity.description)\(labelSuffix.isEmpty ? "" : " (names get \(labelSuffix))")")
        print("")
        let runTitles = (1...options.runs).map { pad("run \($0)", columns.value) }.joined()
        print(
            pad("workload", columns.workload) + pad("metric", columns.metric) + pad("unit", columns.unit)
                + runTitles + pad("median", columns.value))
    }

    /// Prints a workload's rows: each metric's value in every run and its median.
    static func rows(_ outcome: Runner.Outcome) {
        for (index, metric) in outcome.runs[0].enumerated() {
            let values = outcome.runs.map { $0[index].value }
            let cells = values.map { pad(format($0, decimals: metric.decimals, grouped: true), columns.value) }
            let median = Percentile.median(values)
            let workload = "\(outcome.label) (\(outcome.idLabel))"
            let name = pad(workload, columns.workload) + pad(metric.name, columns.metric)
            print(
                name + pad(metric.unit, columns.unit) + cells.joined()
                    + pad(format(median, decimals: metric.decimals, grouped: true), columns.value))
        }
        let phases = outcome.phases
        print(
            pad("", columns.workload) + "phases (median ms): setUp \(format(phases.setUp, decimals: 1)), "
                + "run \(format(phases.run, decimals: 1)), tearDown \(format(phases.tearDown, decimals: 1))")
    }

    /// Prints the machine-readable lines of every outcome: `NAME key median`, the name alone (no id), so that each
    /// line has three fields.
    static func machineLines(_ outcomes: [Runner.Outcome]) {
        print("")
        for outcome in outcomes {
            for (index, metric) in outcome.runs[0].enumerated() {
                let median = Percentile.median(outcome.runs.map { $0[index].value })
                print("\(outcome.label) \(metric.key) \(format(median, decimals: metric.decimals))")
            }
        }
    }

    /// Writes a progress line on stderr.
    static func progress(_ line: String) {
        var text = "loop-bench: \(line)\n"
        text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }

    /// `value` with `decimals` decimals, optionally with thousands separators.
    static func format(_ value: Double, decimals: Int, grouped: Bool = false) -> String {
        guard value.isFinite else { return "\(value)" }
        var unit: Int64 = 1
        for _ in 0..<decimals { unit *= 10 }
        let total = Int64((abs(value) * Double(unit)).rounded())
        var integer = String(total / unit)
        if grouped {
            var digits = Array(integer)
            var index = digits.count - 3
            while index > 0 {
                digits.insert(",", at: index)
                index -= 3
            }
            integer = String(digits)
        }
        let sign = value < 0 && total != 0 ? "-" : ""
        guard decimals > 0 else { return sign + integer }
        let fraction = String(total % unit)
        return sign + integer + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
