import Foundation
import RunLoopKit
import TestSupport
import Testing

/// Random sequences of operations run against a real loop and against ``LoopModel``: after every step the
/// recorded callouts (source performs, observer activities, blocks, timers, descriptor handler calls,
/// schedule/cancel, run results, add errors), every item's observable state and the descriptor sources'
/// registrations must equal the model's prediction, and the registration invariants must hold
/// (``Loop/descriptorRegistrationProblems(sources:staleDescriptors:)``).
///
/// Deterministic: runs are zero-length polls, or long runs the model predicts end without sleeping; timers are
/// due in the past or an hour away; descriptors are the test's own socket pairs and pipe. Replay a failing seed with
/// `RUNLOOPKIT_MODEL_SEED=<seed>` (and `RUNLOOPKIT_MODEL_PRINT=1` to see every step); more seeds and steps with
/// `RUNLOOPKIT_SOAK=1`.
@Suite struct ModelBasedTests {
    static let defaultSeeds: [UInt64] = [1, 2, 0xC0FFEE, 0xDEAD_BEEF, 20_260_401]

    static var seeds: [UInt64] {
        if let text = ProcessInfo.processInfo.environment["RUNLOOPKIT_MODEL_SEED"], let seed = UInt64(text) {
            return [seed]
        }
        if underSanitizer { return Array(defaultSeeds.prefix(2)) }
        return Reliability.soak ? defaultSeeds + (100..<105).map { UInt64($0) } : defaultSeeds
    }

    static var steps: Int { underSanitizer ? 1_000 : Reliability.size(2_000, soak: 20_000) }

    /// Whether CI runs the suite under a sanitizer (`.ci/run` sets `RUNLOOPKIT_SANITIZER`): there each seed's child runs several
    /// times slower and holds a CPU the rest of the suite's timing tests need, so two seeds of 1,000 steps stand in
    /// for five of 2,000 (the coverage thresholds apply from 2,000 steps on).
    static var underSanitizer: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["RUNLOOPKIT_SANITIZER"] != nil
    }

    /// Each seed runs in a child process of its own (an exit test). The check compares the loop's epoll set with the
    /// kernel's after every step, and in this process other tests spawn children, which hold every file of ours
    /// until they exec: the kernel then keeps the entry of a file the test replaced, and the loop meets it. In the
    /// full suite on CI that broke the comparison twice in two runs; alone, never.
    /// The seeds one after another (`.serialized`): five children at once would starve the rest of the suite.
    @Test(.serialized, arguments: seeds)
    func realLoopMatchesTheModel(seed: UInt64) async {
        let stepCount = Self.steps
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            [seed = seed as UInt64, stepCount = stepCount as Int] in
            let failure = Box<String>()
            let thread = TestThread {
                failure.value = ModelBasedTests.check(seed: seed, steps: stepCount)
            }
            thread.join()
            if let message = failure.value {
                print("MODEL-MISMATCH " + message)
                fflush(nil)  // Every stream: the parent reads what was printed.
                exit(1)
            }
        }
        // What the child printed (figures, RUNLOOPKIT_MODEL_PRINT's steps) is passed on; a mismatch is the issue.
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let mismatch = output.range(of: "MODEL-MISMATCH ")
        print(output[..<(mismatch?.lowerBound ?? output.endIndex)], terminator: "")
        if let mismatch {
            Issue.record(Comment(rawValue: String(output[mismatch.upperBound...])))
        }
    }

    /// How much of the semantics a sequence exercised, so the test cannot pass vacuously.
    struct ModelCoverage: CustomStringConvertible {
        var counts: [String: Int] = [:]
        var rejected = 0
        /// Why candidate steps were dropped, by reason.
        var rejections: [String: Int] = [:]

        mutating func count(_ trace: [String]) {
            for entry in trace {
                let key: String
                if entry.hasPrefix("R:") || entry.hasPrefix("E:") {
                    key = entry
                } else if entry.hasPrefix("O") {
                    key = "O." + entry.split(separator: ".").last!
                } else if descriptorOrderKey(entry) != nil {
                    key = "D:" + entry.split(separator: ":").last!
                } else {
                    key = String(entry.prefix { $0.isLetter })
                }
                counts[key, default: 0] += 1
            }
        }

        /// The first kind of callout seen fewer than 5 times, if any (with a sequence of 2,000 steps or more).
        var missing: String? {
            let kinds = [
                "S", "T", "K", "sched", "cancel", "R:finished", "R:stopped", "R:timedOut", "R:handledSource",
                "E:invalidated", "O.entry", "O.beforeTimers", "O.beforeSources", "O.beforeWaiting",
                "O.afterWaiting", "O.exit", "D:readable", "D:writable", "D:readable|writable", "D:hangUp", "D:invalid",
            ]
            // Rarer ones, each at least once: an add after the descriptor was replaced, and the descriptor rules the
            // model notes (LoopModel.notes).
            let rare = [
                "E:badDescriptor", "note:parked", "note:unparked", "note:change refused", "note:shared report",
                "note:mask changed before its call", "note:left before its call", "note:hang-up told",
                "note:hang-up to a registration watching nothing",
            ]
            return kinds.first { counts[$0, default: 0] < 5 } ?? rare.first { counts[$0, default: 0] < 1 }
        }

        var description: String {
            counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                + " rejected=\(rejected) ("
                + rejections.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
        }
    }

    /// Runs `steps` steps of `seed` on the calling thread's loop; answers a failure report, or nil.
    static func check(seed: UInt64, steps: Int) -> String? {
        let real = ModelRealLoop(loop: Loop.current)
        var model = LoopModel()
        var generator = ModelGenerator(seed: seed)
        var history: [String] = []
        var rejected = 0
        var coverage = ModelCoverage()
        let printsSteps = ProcessInfo.processInfo.environment["RUNLOOPKIT_MODEL_PRINT"] == "1"
        defer {
            for source in real.sources.values { source.invalidate() }
            for timer in real.timers.values { timer.invalidate() }
            for observer in real.observers.values { observer.invalidate() }
            for source in real.descriptorSources.values { source.invalidate() }
            real.closeDescriptors()
        }
        for step in 0..<steps {
            var op = generator.next(model: model)
            var predicted = model
            predicted.trace = []
            predicted.notes = []
            predicted.apply(op)
            var attempts = 1
            while let reason = predicted.aborted {
                rejected += 1
                coverage.rejections[reason, default: 0] += 1
                if printsSteps { print("  rejected (\(reason)): \(op)\n    \(predicted.trace.prefix(80))") }
                op = attempts < 20 ? generator.next(model: model) : .wakeUp
                attempts += 1
                predicted = model
                predicted.trace = []
                predicted.notes = []
                predicted.apply(op)
            }
            model = predicted
            generator.accept(op, model: model)
            history.append("\(step): \(op)")
            if printsSteps { print("\(step): \(op)") }
            if history.count > 12 { history.removeFirst() }

            real.trace = []
            let start = Loop.Instant.now
            real.execute(op)
            let elapsed = Loop.Instant.now - start
            let actual = normalizedTrace(real.trace)
            let expected = normalizedTrace(model.trace)
            var problems: [String] = []
            if actual != expected {
                problems.append("callouts differ\n  expected: \(expected)\n  actual:   \(actual)")
            }
            problems += real.stateDifferences(from: model)
            problems += real.registrationDifferences(from: model)
            if elapsed > .seconds(5) { problems.append("the step took \(elapsed): the loop slept") }
            if !problems.isEmpty {
                return """
                    Model mismatch, seed \(seed), step \(step) (replay: RUNLOOPKIT_MODEL_SEED=\(seed)):
                    \(problems.joined(separator: "\n"))
                    last steps:
                    \(history.joined(separator: "\n"))
                    """
            }
            coverage.count(expected)
            for note in model.notes { coverage.counts["note:" + note, default: 0] += 1 }
        }
        coverage.rejected = rejected
        Reliability.report("model: seed \(seed), \(steps) steps checked; \(coverage)")
        // The coverage thresholds are set for 2,000 steps or more (the shorter runs under a sanitizer skip them).
        guard steps >= 2_000 else { return nil }
        return coverage.missing.map { "seed \(seed) exercised too little: \($0) (\(coverage))" }
    }
}
