import Glibc

// loop-bench [WORKLOAD|all]... [--runs N] [--quick] [--in-process]: runs the workloads of Docs/Benchmarks.md, each
// given by its name (ping-pong) or its id (W1), each run in a fresh process (this binary again, with the hidden
// --one-run flag), and prints a table plus one machine-readable line per metric, `NAME key median`. Exits 1 if a
// workload fails its own checks; `loop-bench --help` lists the workloads.

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
        print("\(workload.name + labelSuffix) FAILED: \(error)")
        failed = true
    }
}
Report.machineLines(outcomes)
fflush(nil)
exit(failed ? 1 : 0)
