import Glibc

// loop-soak [--seconds N] [--load K] [--warmup S] [--seed N]: runs every kind of RunLoopKit item, cross-thread traffic
// and LoopThread churn for N seconds under K busy threads, then prints a report and exits 0 if every check passed,
// 1 if one failed (Docs/Reliability.md, "Soak"). scripts/soak.sh builds and runs it.

let options: Options
do {
    options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    StandardError.print("\(error)")
    exit(2)
}
exit(Soak(options: options).run() ? 0 : 1)
