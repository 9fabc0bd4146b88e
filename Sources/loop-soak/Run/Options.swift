import Glibc

/// The command line: `loop-soak [--seconds N] [--load K] [--warmup S] [--seed N] [--only KIND,...] [--samples FILE]
/// [--heap-reports DIR]`, or `loop-soak --judge FILE`.
struct Options {
    /// How long the traffic runs, warm-up included.
    var seconds = 30
    /// How many busy threads compete for the CPUs (`stress --cpu K`).
    var load = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    /// The warm-up in seconds, when given; see ``warmupSeconds``.
    var warmup: Int?
    /// Seeds every driver's random choices, so a failing run can be repeated with the same choices.
    var seed: UInt64 = 0x50A6
    /// Where each memory sample is written as it is taken (`second resident-bytes heap-bytes`), when given.
    var samplesPath: String?
    /// Where malloc's whole report (`malloc_info`'s XML, every arena) is written once a minute, as
    /// `DIR/heap-SECOND.xml`, when given.
    var heapReportsPath: String?
    /// The kinds of traffic to run (``Options/kinds``); every kind when `nil`.
    var only: Set<String>?
    /// A samples file (``samplesPath``'s format) to judge instead of running, when given.
    var judgedSamplesPath: String?

    /// The kinds of traffic `--only` can pick, in the order the soak starts them.
    static let kinds = [
        "blocks", "sources", "descriptors", "timers", "callbacks", "threads", "async", "helpers", "signals", "children",
    ]

    /// Whether the traffic `kind` runs.
    func runs(_ kind: String) -> Bool {
        only?.contains(kind) ?? true
    }

    static let usage = """
        usage: loop-soak [--seconds N] [--load K] [--warmup S] [--seed N] [--only KIND,...] [--samples FILE]
                       [--heap-reports DIR]
               loop-soak --judge FILE
          Runs every kind of RunLoopKit item, cross-thread traffic and LoopThread churn for N seconds under
          K busy threads, then checks exactly-once delivery, descriptor, thread and memory growth.
          --seconds N   how long the traffic runs, warm-up included (default 30, at least 10)
          --load K      busy threads spinning at normal priority, like stress --cpu K (default: CPU count)
          --warmup S    seconds before the baseline of descriptors, threads and RSS is taken
                        (default: a fifth of the run; for runs under a minute at most 5 s)
          --seed N      seeds the drivers' random choices (default 20646)
          --only KINDS  runs only these kinds of traffic, comma-separated, to tell which one grows: blocks,
                        sources, descriptors, timers, callbacks, threads, async, helpers, signals, children
          --samples FILE  writes every memory sample, once a second: second, RSS bytes, malloc's bytes in use
          --heap-reports DIR  writes malloc_info's report (every arena) once a minute to DIR/heap-SECOND.xml
          --judge FILE  runs nothing: judges the memory of an earlier run from the samples it wrote with --samples
                        (its memory table, slopes and second half), as that run's report did
        Exit status: 0 every check passed, 1 a check failed, 2 bad arguments.
        """

    /// The warm-up: given, or a fifth of the run (for runs under a minute at most 5 s: malloc's arenas, the thread
    /// stack cache and the loops' pools are established within about 3 s), always leaving 6 s of samples after it.
    var warmupSeconds: Int {
        let chosen = warmup ?? (seconds < 60 ? min(seconds / 5, 5) : seconds / 5)
        return max(1, min(chosen, seconds - 6))
    }

    /// Parses `arguments` (without the program name).
    ///
    /// - Throws: ``UsageError`` with the usage text for an unknown or malformed argument.
    init(arguments: [String]) throws(UsageError) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--seconds":
                guard let value = remaining.popFirst().flatMap(Int.init), value >= 10 else {
                    throw UsageError("--seconds needs a number of at least 10\n\(Self.usage)")
                }
                seconds = value
            case "--load":
                guard let value = remaining.popFirst().flatMap(Int.init), value >= 0 else {
                    throw UsageError("--load needs a number of threads (0 for none)\n\(Self.usage)")
                }
                load = value
            case "--warmup":
                guard let value = remaining.popFirst().flatMap(Int.init), value >= 1 else {
                    throw UsageError("--warmup needs a positive number of seconds\n\(Self.usage)")
                }
                warmup = value
            case "--seed":
                guard let value = remaining.popFirst().flatMap(UInt64.init) else {
                    throw UsageError("--seed needs a non-negative integer\n\(Self.usage)")
                }
                seed = value
            case "--only":
                let kinds = Set((remaining.popFirst() ?? "").split(separator: ",").map(String.init))
                guard !kinds.isEmpty, kinds.isSubset(of: Self.kinds) else {
                    throw UsageError(
                        "--only needs kinds of traffic from: \(Self.kinds.joined(separator: ", "))\n\(Self.usage)")
                }
                only = kinds
            case "--samples":
                guard let path = remaining.popFirst(), !path.isEmpty else {
                    throw UsageError("--samples needs a file name\n\(Self.usage)")
                }
                samplesPath = path
            case "--heap-reports":
                guard let path = remaining.popFirst(), !path.isEmpty else {
                    throw UsageError("--heap-reports needs a directory\n\(Self.usage)")
                }
                heapReportsPath = path
            case "--judge":
                guard let path = remaining.popFirst(), !path.isEmpty else {
                    throw UsageError("--judge needs a samples file\n\(Self.usage)")
                }
                judgedSamplesPath = path
            case "-h", "--help":
                throw UsageError(Self.usage)
            default:
                throw UsageError("unknown argument '\(argument)'\n\(Self.usage)")
            }
        }
        if let warmup, warmup > seconds - 6 {
            throw UsageError("--warmup must leave at least 6 s of the run for samples\n\(Self.usage)")
        }
    }
}

/// A command line the soak cannot run with, and what to print about it.
struct UsageError: Error, CustomStringConvertible {
    /// The message, usage text included.
    let description: String

    /// An error saying `description`.
    init(_ description: String) {
        self.description = description
    }
}
