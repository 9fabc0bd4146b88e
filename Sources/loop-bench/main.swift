import Glibc

// loop-bench [W1|W1t|W2|W2t|W2f|W2tf|W3|W3c|W3f|W3r|W4|W4c|W4f|W4r|W5|F|P|M|A|T|C|S1|S2|S2c|S3|G1|G2|G3|all] [--runs N] [--quick] [--in-process]: runs the
// workloads of Docs/Benchmarks.md, each run in a fresh process (this binary again, with the hidden --one-run flag),
// and prints a table plus one machine-readable line per metric. Exits 1 if a workload fails its own checks.

let options: Options
do {
    options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    Report.progress("\(error)")
    exit(2)
}

if let workload = options.oneRun {
    exit(OneRun.main(workload, scale: options.quick ? 10 : 1))
}

let labelSuffix = Affinity.labelSuffix
let runner = Runner(
    runs: options.runs, scale: options.quick ? 10 : 1, inProcess: options.inProcess, labelSuffix: labelSuffix)
var outcomes: [Runner.Outcome] = []
var failed = false
Report.header(options: options, labelSuffix: labelSuffix)
for workload in options.workloads {
    do {
        let outcome = try runner.run(workload)
        Report.rows(outcome)
        outcomes.append(outcome)
        if !outcome.violations.isEmpty {
            print("\(outcome.label) FAILED: must be 0: \(outcome.violations.joined(separator: ", "))")
            failed = true
        }
        fflush(nil)
    } catch {
        print("\(workload.id + labelSuffix) FAILED: \(error)")
        failed = true
    }
}
Report.machineLines(outcomes)
fflush(nil)
exit(failed ? 1 : 0)
