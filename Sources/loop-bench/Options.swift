/// The command line: `loop-bench [W1|W2|W2t|W3|W4|W5|F|P|M|A|all] [--runs N] [--quick]`.
struct Options {
    /// The workloads to run, in order.
    var workloads: [any Benchmark.Type] = Options.allWorkloads
    /// Runs per workload; the median of each metric is reported.
    var runs = 3
    /// Divides every size by 10, for smoke runs.
    var quick = false

    /// Every workload, in id order.
    static var allWorkloads: [any Benchmark.Type] {
        [
            PingPongBenchmark.self,
            FanInBenchmark.self,
            FanInViaLoopThreadBenchmark.self,
            TimerFiringBenchmark.self,
            CallbackFiringBenchmark.self,
            TimerChurnBenchmark.self,
            CallbackChurnBenchmark.self,
            WakeLatencyBenchmark.self,
            FootprintBenchmark.self,
            PassCostBenchmark.self,
            MainActorBenchmark.self,
            ActorHopBenchmark.self,
        ]
    }

    static let usage = """
        usage: loop-bench [W1|W2|W2t|W3|W4|W5|F|P|M|A|all]... [--runs N] [--quick]
          W1 ping-pong, W2 fan-in (W2t: through LoopThread.perform), W3 timers, W4 churn (W3c, W4c: with one-shot
          callbacks, Loop.schedule(at:)), W5 wake latency
          (Docs/Benchmarks.md),
          F footprint per idle loop (descriptors, resident bytes), P pass cost (1 vs 10,000 idle items),
          M @MainActor round trip on Loop.main,
          A actor hop (an actor on a loop vs Loop.perform and the default executor);
          default: all
          --runs N   runs per workload, median reported (default 3)
          --quick    sizes divided by 10, for smoke runs
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
                guard let workload = Self.allWorkloads.first(where: { $0.id.lowercased() == name.lowercased() }) else {
                    throw BenchmarkFailure("unknown argument '\(name)'\n\(Self.usage)")
                }
                chosen.append(workload)
            }
        }
        if !chosen.isEmpty { workloads = chosen }
    }
}
