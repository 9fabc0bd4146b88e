import RunLoopKitGLib

/// The command line: `loop-bench [W1|W1t|W2|W2t|W2f|W2tf|W3|W3c|W3f|W3r|W4|W4c|W4f|W4r|W5|F|P|M|A|T|C|S1|S2|S2c|S3|G1|G2|G3|all] [--runs N] [--quick]
/// [--in-process]`.
struct Options {
    /// The workloads to run, in order.
    var workloads: [any Benchmark.Type] = Options.allWorkloads
    /// Runs per workload; the median of each metric is reported.
    var runs = 3
    /// Divides every size by 10, for smoke runs.
    var quick = false
    /// Runs every repetition in this process instead of a fresh one (for valgrind and callgrind).
    var inProcess = false
    /// Set by the hidden `--one-run ID`: this process is a child run of that one workload (``OneRun``).
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

    static let usage = """
        usage: loop-bench [W1|W1t|W2|W2t|W2f|W2tf|W3|W3c|W3f|W3r|W4|W4c|W4f|W4r|W5|F|P|M|A|T|C|S1|S2|S2c|S3|G1|G2|G3|all]... [--runs N] [--quick] [--in-process]
          W1 ping-pong, W2 fan-in (W1t, W2t: through LoopThread.perform;
          W2f, W2tf: allocation-free perform(with:) calls), W3 timers, W4 churn (W3c, W4c: with
          one-shot callbacks, Loop.schedule(at:); W3f, W4f: allocation-free schedule(at:with:) calls;
          W3r, W4r: LoopTimers made before the clock and re-armed with setNextFireTime), W5 wake latency
          (Docs/Benchmarks.md),
          F footprint per idle loop (descriptors, resident bytes), P pass cost (1 vs 10,000 idle items),
          M @MainActor round trip on Loop.main,
          A actor hop (an actor on a loop vs Loop.perform and the default executor),
          T task executor hop (withTaskExecutorPreference vs LoopThread.run, an actor, no hop; 16-task fan-in),
          C clock lateness (Task.sleep on loop.clock, with and without tolerance, vs ContinuousClock),
          S1 pass cost vs 1/100/10,000 registered sources, S2 timer churn vs 1k/10k/100k/1M live timers
          (S2c: one-shot callbacks), S3 wake cost vs 1/10/100/1,000 loops;
          G1/G2/G3 signal → handler: RunLoopKit alone, inside GLib's main loop, GLib's g_main_context_invoke
          (they need GLib's runtime library, and all leaves them out without it; scripts/glib-latency.sh
          alternates them);
          default: all
          --runs N       runs per workload, median reported (default 3)
          --quick        sizes divided by 10, for smoke runs
          --in-process   every run in this process (default: each run in a fresh process; for valgrind)
        """

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
                guard let id = remaining.popFirst(), let workload = Self.workload(named: id) else {
                    throw BenchmarkFailure("\(OneRun.flag) needs a workload id\n\(Self.usage)")
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

    /// The workload whose id is `name`, ignoring case.
    private static func workload(named name: String) -> (any Benchmark.Type)? {
        everyWorkload.first { $0.id.lowercased() == name.lowercased() }
    }
}
