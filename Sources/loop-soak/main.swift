import Glibc

// loop-soak [--seconds N] [--load K] [--warmup S] [--seed N] (loop-soak --help for the rest): runs every kind of RunLoopKit item, cross-thread traffic
// and LoopThread churn for N seconds under K busy threads, then prints a report and exits 0 if every check passed,
// 1 if one failed (Docs/Reliability.md, "Soak"). scripts/check/soak.sh builds and runs it.
//
// Traffic/: the kinds of traffic, one file each (Workload conformers). Checks/: what they are checked with
// (delivery channels and tallies, activity ledgers, violations, memory and process figures). Run/: the run (options,
// hubs, CPU load, drivers and their control, report). Support/: small helpers shared by all of them.

let options: Options
do {
    options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    StandardError.print("\(error)")
    exit(2)
}
if let path = options.judgedSamplesPath {
    exit(SamplesJudgement.judge(path: path) ? 0 : 1)
}
exit(Soak(options: options).run() ? 0 : 1)
