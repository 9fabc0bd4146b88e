import RunLoopKitGLib

/// The command line: `loop-bench [WORKLOAD|all]... [--runs N] [--quick] [--in-process]`, where a workload is given by
/// its name (`ping-pong`) or by its id (`W1`), in any case (``usage`` lists them).
struct Options {
    /// The workloads to run, in order.
    var workloads: [any Benchmark.Type] = Options.allWorkloads
    /// Runs per workload; the median of each metric is reported.
    var runs = 3
    /// Divides every size by 10, for smoke runs.
    var quick = false
    /// Runs every repetition in this process instead of a fresh one (for valgrind and callgrind).
    var inProcess = false
    /// Set by the hidden `--one-run NAME`: this process is a child run of that one workload (``OneRun``).
    var oneRun: (any Benchmark.Type)?

    /// Every workload, in id order: the GLib ones (G1–G3) only where GLib can be loaded.
    static var allWorkloads: [any Benchmark.Type] {
        let glibAvailable = (try? GLibFunctions.shared()) != nil
        return everyWorkload.filter { glibAvailable || !($0 is GLibLatencyBenchmark.Type) }
    }

    /// Every workload the command line knows, in id order.
    static var everyWorkload: [any Benchmark.Type] {
        [
            PingPongBenchmark.self,
            PingPongViaLoopThreadBenchmark.self,
            FanInBenchmark.self,
            FanInViaLoopThreadBenchmark.self,
            FanInFunctionCallBenchmark.self,
            FanInFunctionCallViaLoopThreadBenchmark.self,
            FanInPortBenchmark.self,
            TimerFiringBenchmark.self,
            CallbackFiringBenchmark.self,
            FunctionCallbackFiringBenchmark.self,
            ReusedTimerFiringBenchmark.self,
            TimerChurnBenchmark.self,
            CallbackChurnBenchmark.self,
            FunctionCallbackChurnBenchmark.self,
            ReusedTimerChurnBenchmark.self,
            WakeLatencyBenchmark.self,
            FootprintBenchmark.self,
            PassCostBenchmark.self,
            MainActorBenchmark.self,
            ActorHopBenchmark.self,
            TaskExecutorHopBenchmark.self,
            ClockLatenessBenchmark.self,
            SourceScalingBenchmark.self,
            TimerScalingBenchmark.self,
            CallbackScalingBenchmark.self,
            WakeScalingBenchmark.self,
            GLibLatencyAloneBenchmark.self,
            GLibLatencyEmbeddedBenchmark.self,
            GLibLatencyInvokeBenchmark.self,
        ]
    }

    /// The `--help` text: the options, and every workload by name with its id and what it does.
    static var usage: String {
        func column(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(1, width - text.count))
        }
        let workloads = everyWorkload.map { "    " + column($0.name, 31) + column($0.id, 6) + $0.title }
        return """
            usage: loop-bench [WORKLOAD|all]... [--runs N] [--quick] [--in-process]
              Runs each workload (default: all) --runs times, each run in a fresh process, and prints a table and then
              one "NAME key median" line per metric. A workload is given by its name or by its id (Docs/Benchmarks.md,
              where W1-W5 are the shared benchmarks.md's); names and ids may be given in any case.
            workloads (name, id, what it does):
            \(workloads.joined(separator: "\n"))
              signal-latency, signal-latency-in-glib and glib-invoke-latency need GLib's runtime library, and all
              leaves them out without it; scripts/bench/glib-latency.sh alternates them.
            options:
              --runs N       runs per workload, median reported (default 3)
              --quick        sizes divided by 10, for smoke runs
              --in-process   every run in this process (default: each run in a fresh process; for valgrind)
            """
    }

    /// Parses `arguments` (without the program name).
    ///
    /// - Throws: ``BenchmarkFailure`` with the usage text for an unknown argument.
    init(arguments: [String]) throws {
        var chosen: [any Benchmark.Type] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--quick":
                quick = true
            case "--in-process":
                inProcess = true
            case OneRun.flag:
                guard let name = remaining.popFirst(), let workload = Self.workload(named: name) else {
                    throw BenchmarkFailure("\(OneRun.flag) needs a workload's name\n\(Self.usage)")
                }
                oneRun = workload
            case "--runs":
                guard let value = remaining.popFirst().flatMap(Int.init), value > 0 else {
                    throw BenchmarkFailure("--runs needs a positive number\n\(Self.usage)")
                }
                runs = value
            case "-h", "--help":
                throw BenchmarkFailure(Self.usage)
            case let name where name.lowercased() == "all":
                chosen.append(contentsOf: Self.allWorkloads)
            case let name:
                guard let workload = Self.workload(named: name) else {
                    throw BenchmarkFailure("unknown argument '\(name)'\n\(Self.usage)")
                }
                chosen.append(workload)
            }
        }
        if !chosen.isEmpty { workloads = chosen }
    }

    /// The workload whose name or id is `argument`, ignoring case: `ping-pong`, `W1` and `w1` are one workload.
    private static func workload(named argument: String) -> (any Benchmark.Type)? {
        let wanted = argument.lowercased()
        return everyWorkload.first { $0.name == wanted || $0.id.lowercased() == wanted }
    }
}
