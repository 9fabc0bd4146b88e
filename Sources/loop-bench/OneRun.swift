import Glibc

/// The child side of ``ChildRun``: `loop-bench --one-run NAME [--quick]` runs workload NAME once and writes its results
/// on stdout as tab-separated lines, which the parent reads back.
///
/// - `@metric <name> <unit> <key> <value> <decimals> <mustBeZero 0|1>`, one per metric, in the workload's order;
///   the value is printed exactly (Swift's shortest round-tripping form).
/// - `@phases <setUp ms> <run ms> <tearDown ms>`
/// - `@failed <message>` instead of both when the run failed (the child then exits with status 1).
///
/// Threading: main thread only.
enum OneRun {
    /// The hidden command-line flag that makes a process a child run.
    static let flag = "--one-run"

    /// Runs `workload` once with `scale`, prints its results as above and answers the exit status.
    static func main(_ workload: any Benchmark.Type, scale: Int) -> CInt {
        let status: CInt
        do {
            let (metrics, phases) = try Runner.runOnce(workload, scale: scale)
            for metric in metrics {
                let fields = [
                    metric.name, metric.unit, metric.key, "\(metric.value)", "\(metric.decimals)",
                    metric.mustBeZero ? "1" : "0",
                ]
                print((["@metric"] + fields).joined(separator: "\t"))
            }
            print("@phases\t\(phases.setUp)\t\(phases.run)\t\(phases.tearDown)")
            status = 0
        } catch {
            print("@failed\t\("\(error)".split(separator: "\n").joined(separator: " "))")
            status = 1
        }
        fflush(nil)
        return status
    }

    /// What the lines of a child's stdout say.
    static func parse(_ text: String) -> (metrics: [Metric], phases: (Double, Double, Double)?, failure: String?) {
        var metrics: [Metric] = []
        var phases: (Double, Double, Double)?
        var failure: String?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            switch fields.first {
            case "@metric" where fields.count == 7:
                guard let value = Double(fields[4]), let decimals = Int(fields[5]) else { continue }
                metrics.append(
                    Metric(
                        fields[1], unit: fields[2], key: fields[3], value: value, decimals: decimals,
                        mustBeZero: fields[6] == "1"))
            case "@phases" where fields.count == 4:
                if let setUp = Double(fields[1]), let run = Double(fields[2]), let tearDown = Double(fields[3]) {
                    phases = (setUp, run, tearDown)
                }
            case "@failed":
                failure = fields.dropFirst().joined(separator: "\t")
            default:
                continue
            }
        }
        return (metrics, phases, failure)
    }
}
