import Glibc
import RunLoopKit

/// The run: starts the load, the hubs and every workload, samples memory once a second, pauses the drivers after
/// the warm-up and at the end to count descriptors and threads at the same point of their rounds, then stops
/// everything and reports.
struct Soak {
    let options: Options

    /// What the traffic phase measured, for the report.
    private struct Measured {
        let elapsed: Duration
        let rssTrimmed: Int
        let afterWarmup: ResourceSnapshot
        let atEnd: ResourceSnapshot
        let heapAtRest: (afterWarmup: Int, atEnd: Int)
        let memory: MemorySampler
        let hubs: [Report.HubFigures]
        let loadMegaSpins: Int
    }

    /// Runs the soak; answers whether every check passed.
    func run() -> Bool {
        _ = Violations.shared  // Its clock starts now.
        let atStart = ResourceSnapshot.now()
        let rssAtStart = ProcessFigures.residentBytes()
        Report.header(options, atStart: atStart)
        guard let measured = runTraffic() else { return false }

        // Everything stopped and released: the descriptors are back where they started, but for libdispatch's.
        var afterTeardown = ResourceSnapshot.now()
        Waiting.until(Waiting.deadline(in: Limits.release), every: .milliseconds(10)) {
            afterTeardown = ResourceSnapshot.now()
            return Report.isBack(afterTeardown, to: atStart)
        }
        return Report.final(
            Report.Figures(
                options: options, elapsed: measured.elapsed, rssTrimmed: measured.rssTrimmed, atStart: atStart,
                afterWarmup: measured.afterWarmup,
                atEnd: measured.atEnd, heapAtRest: measured.heapAtRest, afterTeardown: afterTeardown,
                rssAtStart: rssAtStart, memory: measured.memory,
                hubs: measured.hubs, loadMegaSpins: measured.loadMegaSpins))
    }

    /// Starts everything, runs the traffic, stops and releases everything; `nil` if setting up failed.
    private func runTraffic() -> Measured? {
        let load = CPULoad(threads: options.load)
        defer { load.stop() }
        let nestedRuns = Tallies.shared.make("hubs: nested runs", promise: nil)
        let hubs: [Hub]
        let workloads: [any Workload]
        do {
            hubs = [
                try Hub(name: "hub-ordered", nestsInsideBlocks: false, nestedRuns: nestedRuns),
                try Hub(name: "hub-nesting", nestsInsideBlocks: true, nestedRuns: nestedRuns),
            ]
            let seed = options.seed
            var chosen: [any Workload] = []
            if options.runs("blocks") { chosen.append(BlockTraffic(hubs: hubs, producers: 2)) }
            if options.runs("sources") { chosen.append(try SourceTraffic(hubs: hubs)) }
            if options.runs("descriptors") { chosen.append(try DescriptorTraffic(hubs: hubs, seed: seed &+ 1)) }
            if options.runs("timers") { chosen.append(TimerTraffic(hubs: hubs, seed: seed &+ 2)) }
            if options.runs("callbacks") { chosen.append(CallbackTraffic(hubs: hubs, seed: seed &+ 3)) }
            if options.runs("threads") { chosen.append(ThreadChurn(seed: seed &+ 4)) }
            if options.runs("async") { chosen.append(AsyncTraffic(hubs: hubs)) }
            if options.runs("helpers") { chosen.append(try HelperTraffic(hubs: hubs, seed: seed &+ 5)) }
            if options.runs("signals") { chosen.append(try SignalTraffic(hubs: hubs, seed: seed &+ 6)) }
            if options.runs("children") { chosen.append(ChildTraffic(hubs: hubs, seed: seed &+ 7)) }
            workloads = chosen
        } catch {
            StandardError.print("loop-soak: setting up failed: \(error)")
            return nil
        }
        let control = RunControl()
        do {
            for workload in workloads { try workload.start(control) }
        } catch {
            StandardError.print("loop-soak: starting a workload failed: \(error)")
            return nil
        }

        // The run: one sample a second; the baseline of descriptors and threads at the end of the warm-up. The
        // pause for that baseline does not count as traffic time: the seconds after it start when it ends.
        let begin = Loop.Instant.now
        var origin = begin
        var memory = MemorySampler(warmupSeconds: options.warmupSeconds, seconds: options.seconds)
        let samplesFile = options.samplesPath.flatMap { fopen($0, "w") }
        if options.samplesPath != nil && samplesFile == nil {
            StandardError.print("loop-soak: cannot write the samples to \(options.samplesPath!)")
        }
        defer { if let samplesFile { fclose(samplesFile) } }
        if let samplesFile {
            fputs("# second resident-bytes malloc-in-use-bytes (warm-up \(options.warmupSeconds) s)\n", samplesFile)
        }
        var afterWarmup = ResourceSnapshot(descriptors: -1, threads: -1, dispatchThreads: 0, loops: -1)
        var heapAtRestAfterWarmup = 0
        let progressEvery = max(5, options.seconds / 20)
        for second in 1...options.seconds {
            Waiting.sleep(until: origin + .seconds(second))
            if second == options.warmupSeconds {
                let pauseStart = Loop.Instant.now
                (afterWarmup, heapAtRestAfterWarmup) = quiescentSnapshot(control, hubs, "after the warm-up")
                control.resume()
                origin = origin + (Loop.Instant.now - pauseStart)
            }
            let sample = memory.sample(at: second)
            if let samplesFile {
                fputs("\(sample.second) \(sample.resident) \(sample.heap)\n", samplesFile)
                fflush(samplesFile)
            }
            if let directory = options.heapReportsPath, second % 60 == 0 || second == options.seconds {
                HeapFigures.writeLastReport(to: "\(directory)/heap-\(second).xml")
            }
            if second % progressEvery == 0 || second == options.seconds {
                Report.progress(second: second, rss: sample.resident, heap: sample.heap)
            }
        }
        let elapsed = Loop.Instant.now - origin

        // The end: every driver parked, every delivery arrived, then the same counts as after the warm-up. Something
        // may still be letting go of a descriptor or thread it was done with: wait for that, with a limit.
        let atRest = quiescentSnapshot(control, hubs, "at the end")
        var atEnd = atRest.snapshot
        let heapAtRestAtEnd = atRest.heapInUse
        if !atEnd.matches(afterWarmup) {
            Waiting.until(Waiting.deadline(in: Limits.release), every: .milliseconds(10)) {
                atEnd = ResourceSnapshot.now()
                return atEnd.matches(afterWarmup)
            }
        }
        // How much of the resident set is free memory malloc kept (after the last sample: the figures are untouched).
        HeapFigures.trim()
        let rssTrimmed = ProcessFigures.residentBytes()
        let stragglers = control.stop(deadline: Waiting.deadline(in: Limits.round))
        if !stragglers.isEmpty { Violations.shared.record("drivers that did not leave: \(stragglers)") }
        for workload in workloads { workload.join() }
        for workload in workloads { workload.tearDown() }
        for hub in hubs { hub.stop() }
        return Measured(
            elapsed: elapsed, rssTrimmed: rssTrimmed, afterWarmup: afterWarmup, atEnd: atEnd,
            heapAtRest: (heapAtRestAfterWarmup, heapAtRestAtEnd), memory: memory,
            hubs: hubs.map(Report.HubFigures.init), loadMegaSpins: load.megaSpins)
    }

    /// Parks every driver at its checkpoint, waits until every delivery expected so far arrived, lets each hub go
    /// round twice (changes from other threads applied, released items freed), and counts descriptors and threads;
    /// answers them with malloc's bytes in use at that point, where no delivery is on its way (with glibc's
    /// per-thread cache off, the live heap without the traffic in flight that makes the samples swing).
    private func quiescentSnapshot(
        _ control: RunControl, _ hubs: [Hub], _ moment: String
    ) -> (snapshot: ResourceSnapshot, heapInUse: Int) {
        let missing = control.pause(deadline: Waiting.deadline(in: Limits.round))
        if !missing.isEmpty {
            Violations.shared.record(
                "drivers that did not reach a checkpoint within \(Limits.round) \(moment): \(missing)")
        }
        if !Waiting.until(Waiting.deadline(in: Limits.delivery), { Tallies.shared.allComplete }) {
            for tally in Tallies.shared.all where !tally.isComplete {
                Violations.shared.record(
                    "\(tally.kind): \(tally.expected) expected, \(tally.delivered) arrived, \(Limits.deliverySeconds) s after the drivers "
                        + "parked \(moment)")
            }
        }
        for _ in 0..<2 {
            for hub in hubs { _ = try? hub.thread.performAndWait {} }
        }
        return (ResourceSnapshot.now(), HeapFigures.inUseBytes())
    }
}
