import Glibc
import RunLoopKit

/// What the soak prints: a header, a progress line now and then, and the final report with every figure and check.
enum Report {
    /// Everything the final report shows.
    struct Figures {
        let options: Options
        let elapsed: Duration
        let rssTrimmed: Int
        let atStart: ResourceSnapshot
        let afterWarmup: ResourceSnapshot
        let atEnd: ResourceSnapshot
        /// malloc's bytes in use with every driver parked and every delivery arrived, after the warm-up and at the end.
        let heapAtRest: (afterWarmup: Int, atEnd: Int)
        let afterTeardown: ResourceSnapshot
        let rssAtStart: Int
        let memory: MemorySampler
        let hubs: [HubFigures]
        let loadMegaSpins: Int
    }

    /// What a hub's observer counted.
    struct HubFigures {
        let name: String
        let passes: Int
        let sleeps: Int
        let runs: Int
        let nestedRuns: Int

        /// The figures of `hub`, once it stopped.
        init(_ hub: Hub) {
            name = hub.name
            passes = hub.activities.passCount
            sleeps = hub.activities.sleepCount
            runs = hub.activities.entryCount
            nestedRuns = hub.activities.nestedRunCount
        }
    }

    /// The descriptors libdispatch's manager keeps once Swift's global executor started (its epoll set, eventfd and
    /// timerfd): the only ones allowed to outlive the teardown.
    static let dispatchManagerDescriptors = 3

    /// Whether `now`, after the teardown, has the descriptors of `start` and no others (but for libdispatch's
    /// manager's, once its thread exists).
    static func isBack(_ now: ResourceSnapshot, to start: ResourceSnapshot) -> Bool {
        let allowance = now.dispatchThreads > start.dispatchThreads ? dispatchManagerDescriptors : 0
        return now.descriptors == start.descriptors + allowance
    }

    /// The run's parameters and the machine.
    static func header(_ options: Options, atStart: ResourceSnapshot) {
        let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        print(
            "loop-soak: \(options.seconds) s (warm-up \(options.warmupSeconds) s), \(options.load) busy threads on "
                + "\(cpus) CPUs, seed \(options.seed), traffic: "
                + "\(options.only.map { $0.sorted().joined(separator: ", ") } ?? "every kind"); at start \(atStart), "
                + "RSS \(Format.mebibytes(ProcessFigures.residentBytes()))")
        print(
            HeapFigures.threadCacheIsOff
                ? "  glibc's per-thread malloc cache is off (GLIBC_TUNABLES): malloc's bytes in use are the live heap"
                : "  glibc's per-thread malloc cache is on: malloc's bytes in use include the chunks each thread's cache "
                    + "keeps (GLIBC_TUNABLES=glibc.malloc.tcache_count=0 turns it off)")
        flush()
    }

    /// One progress line: the time, memory, descriptors, threads, deliveries and violations so far.
    static func progress(second: Int, rss: Int, heap: Int) {
        let delivered = Tallies.shared.all.reduce(0) { $0 + $1.delivered }
        print(
            "  \(Format.right("\(second) s", 6))  RSS \(Format.mebibytes(rss, 2)) (malloc in use "
                + "\(Format.mebibytes(heap, 2)))  \(ResourceSnapshot.now())  "
                + "\(Format.count(delivered)) deliveries  \(Violations.shared.count) violations")
        flush()
    }

    /// The final report; answers whether every check passed.
    static func final(_ figures: Figures) -> Bool {
        let seconds = Format.seconds(of: figures.elapsed)
        print("\nloop-soak report: \(Format.decimal(seconds, 1)) s of traffic\n")
        print(
            "  \(Format.left("kind", 52)) \(Format.right("expected", 13)) \(Format.right("delivered", 13)) \(Format.right("per s", 10))  check"
        )
        var exact = true
        for tally in Tallies.shared.all {
            let expected = tally.promise == nil ? "" : Format.count(tally.expected)
            let rate = Format.count(Int((Double(tally.delivered) / seconds).rounded()))
            let verdict: String
            if let promise = tally.promise {
                verdict = (tally.isComplete ? "ok: " : "FAILED: ") + promise
                exact = exact && tally.isComplete
            } else {
                verdict = ""
            }
            print(
                "  \(Format.left(tally.kind, 52)) \(Format.right(expected, 13)) "
                    + "\(Format.right(Format.count(tally.delivered), 13)) \(Format.right(rate, 10))  \(verdict)")
        }
        print()
        for hub in figures.hubs {
            print(
                "  \(hub.name): \(Format.count(hub.passes)) passes, \(Format.count(hub.sleeps)) sleeps, "
                    + "\(Format.count(hub.runs)) runs entered (\(Format.count(hub.nestedRuns)) nested)")
        }
        print("  load: \(Format.count(figures.loadMegaSpins)) M spins on \(figures.options.load) threads")
        print()

        let memory = figures.memory
        let descriptorsFlat = figures.atEnd.descriptors == figures.afterWarmup.descriptors
        let threadsFlat = figures.atEnd.threads == figures.afterWarmup.threads
        let loopsFlat = figures.atEnd.loops == figures.afterWarmup.loops
        let descriptorsBack = isBack(figures.afterTeardown, to: figures.atStart)
        print(
            "  descriptors: \(figures.atStart.descriptors) at start, \(figures.afterWarmup.descriptors) after the "
                + "warm-up, \(figures.atEnd.descriptors) at the end (drivers parked), \(figures.afterTeardown.descriptors) "
                + "after teardown")
        print(
            "  threads:     \(figures.atStart.threads) at start, \(figures.afterWarmup.threads) after the warm-up, "
                + "\(figures.atEnd.threads) at the end (drivers parked), \(figures.afterTeardown.threads) after teardown; "
                + "libdispatch's pool (Swift's global executor): \(figures.afterWarmup.dispatchThreads) after the "
                + "warm-up, \(figures.atEnd.dispatchThreads) at the end, \(figures.afterTeardown.dispatchThreads) after "
                + "teardown")
        print(
            "  loops:       \(figures.atStart.loops) at start, \(figures.afterWarmup.loops) after the warm-up, "
                + "\(figures.atEnd.loops) at the end (drivers parked), \(figures.afterTeardown.loops) after teardown")
        print(
            "  RSS:         \(Format.mebibytes(figures.rssAtStart)) at start, "
                + "\(Format.mebibytes(memory.baseline)) after the warm-up (median of \(MemorySampler.window)), "
                + "\(Format.mebibytes(memory.final)) at the end (median of the last \(MemorySampler.window)), "
                + "max \(Format.mebibytes(memory.maximumAfterWarmup)) after the warm-up, \(Format.mebibytes(memory.maximum)) overall; "
                + "slope \(Format.mebibytesPerHour(memory.residentSlopePerHour)) over \(memory.sampledSeconds) s")
        print(
            "  malloc:      \(Format.mebibytes(memory.heapBaseline, 2)) in use after the warm-up, "
                + "\(Format.mebibytes(memory.heapFinal, 2)) at the end; slope "
                + "\(Format.mebibytesPerHour(memory.heapSlopePerHour)); RSS after malloc_trim(0) at the end "
                + "\(Format.mebibytes(figures.rssTrimmed)) (the free memory malloc kept: "
                + "\(Format.mebibytes(memory.final - figures.rssTrimmed)))")
        print(
            "  at rest:     malloc in use with every driver parked and every delivery arrived: "
                + "\(Format.mebibytes(figures.heapAtRest.afterWarmup, 3)) after the warm-up, "
                + "\(Format.mebibytes(figures.heapAtRest.atEnd, 3)) at the end ("
                + "\(Format.kibibytes(figures.heapAtRest.atEnd - figures.heapAtRest.afterWarmup)))")
        let flatness = SecondHalfFlatness(
            samples: memory.samples, seconds: figures.options.seconds, warmupSeconds: figures.options.warmupSeconds)
        print(
            "  second half: malloc in use "
                + (flatness.isJudged
                    ? "slope \(Format.mebibytesPerHour(flatness.slopePerHour)) over the last \(flatness.spanSeconds) s "
                        + "(medians of \(flatness.blocks.count) blocks of \(SecondHalfFlatness.blockSeconds) s), "
                        + "standard error \(Format.mebibytesPerHour(flatness.standardErrorPerHour))"
                    : "not judged: \(flatness.blocks.count) blocks of \(SecondHalfFlatness.blockSeconds) s after half the "
                        + "run (\(SecondHalfFlatness.minimumBlocks) needed, a run of about 40 minutes)"))
        if figures.options.seconds >= 2 * MemoryTable.rowSeconds {
            print()
            MemoryTable.print(memory.samples)
        }
        print()

        let violations = Violations.shared
        let checks: [(check: String, passed: Bool, judged: Bool)] = [
            (
                "exactly once: every expected delivery arrived, none twice, none out of order where order is promised",
                exact && violations.count == 0, true
            ),
            (
                "descriptors: the same count at the end as after the warm-up (\(figures.afterWarmup.descriptors))",
                descriptorsFlat, true
            ),
            (
                "descriptors: after teardown, back to the count at start (\(figures.atStart.descriptors), plus "
                    + "libdispatch's manager's \(dispatchManagerDescriptors) once it started)", descriptorsBack, true
            ),
            (
                "threads: the same count at the end as after the warm-up (\(figures.afterWarmup.threads))",
                threadsFlat, true
            ),
            (
                "loops: the same count alive at the end as after the warm-up (\(figures.afterWarmup.loops)): the loop "
                    + "of every thread that exited was freed",
                loopsFlat, true
            ),
            (
                "memory: slopes after the warm-up within budget (malloc in use at most "
                    + "\(Format.mebibytesPerHour(memory.heapLimitPerHour)), RSS at most "
                    + "\(Format.mebibytesPerHour(memory.residentLimitPerHour)), each "
                    + "\(Format.mebibytesPerHour(memory.noisePerHour)) of it for this window's noise)"
                    + (memory.isLongEnough
                        ? ""
                        : ": \(memory.sampledSeconds) s of samples, \(MemorySampler.minimumSampledSeconds) s needed"),
                memory.isWithinBudget, memory.isLongEnough
            ),
            (
                "memory: malloc in use flat in the second half (slope at most "
                    + "\(Format.mebibytesPerHour(flatness.limitPerHour)): \(Int(SecondHalfFlatness.errorsAllowed)) "
                    + "standard errors, or \(Format.mebibytesPerHour(SecondHalfFlatness.floorPerHour)) if larger)"
                    + (flatness.isJudged ? "" : ": the run is too short"),
                flatness.isFlat, flatness.isJudged
            ),
        ]
        for (check, passed, judged) in checks {
            print("  \(!judged ? "skip" : passed ? "pass" : "FAIL")  \(check)")
        }
        if !descriptorsFlat || !descriptorsBack {
            print("\n  open descriptors now:")
            for line in ProcessFigures.descriptorList() { print("    \(line)") }
        }
        if !threadsFlat || figures.afterTeardown.threads != figures.atStart.threads {
            print("\n  threads now:")
            for line in ProcessFigures.threadList() { print("    \(line)") }
        }
        if violations.count > 0 {
            print("\n  \(violations.count) violations; the first \(violations.messages.count):")
            for message in violations.messages { print("    \(message)") }
        }
        let passed = checks.allSatisfy { $0.passed || !$0.judged }
        print("\nloop-soak: \(passed ? "PASS" : "FAIL")")
        flush()
        return passed
    }

    private static func flush() {
        fflush(nil)
    }
}
