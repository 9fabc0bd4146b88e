import RunLoopKit
import Synchronization

/// An observer's record of one loop's activities: how many of each, and whether they came in the documented
/// order, run by run, nested runs included (entry, then passes of beforeTimers, beforeSources and, when the loop
/// sleeps, beforeWaiting followed by afterWaiting, then exit).
///
/// Threading: ``observe(_:)`` runs on the loop's thread only; the counts are read from any thread.
final class ActivityLedger: @unchecked Sendable {
    // Unchecked: `runs` is touched by the observed loop's thread only.
    /// Names the loop, for messages.
    let label: String

    private let entries = Atomic<Int>(0)
    private let exits = Atomic<Int>(0)
    private let passes = Atomic<Int>(0)
    private let sleeps = Atomic<Int>(0)
    private let wakes = Atomic<Int>(0)
    private let nestedEntries = Atomic<Int>(0)
    /// One flag per run in progress, innermost last: whether that run is asleep (between beforeWaiting and
    /// afterWaiting). Loop thread only.
    nonisolated(unsafe) private var runs: [Bool]

    /// A ledger for the loop called `label`, whose observer is added while a run is in progress (a block of it), or
    /// before any run when `joinsMidRun` is false.
    init(_ label: String, joinsMidRun: Bool) {
        self.label = label
        runs = joinsMidRun ? [false] : []
    }

    /// Makes the observer of every activity that reports here.
    func makeObserver() -> LoopObserver {
        LoopObserver(activities: .all) { [self] _, activity in observe(activity) }
    }

    /// Records `activity` and checks it may come now. Loop thread only.
    func observe(_ activity: Loop.Activity) {
        switch activity {
        case .entry:
            entries.add(1, ordering: .relaxed)
            if let innermost = runs.last {
                nestedEntries.add(1, ordering: .relaxed)
                if innermost { fail("a run entered while the enclosing run sleeps") }
            }
            runs.append(false)
        case .exit:
            exits.add(1, ordering: .relaxed)
            guard let asleep = runs.popLast() else { return fail("exit without a run in progress") }
            if asleep { fail("exit while asleep (beforeWaiting without afterWaiting)") }
        case .beforeTimers, .beforeSources:
            if activity == .beforeTimers { passes.add(1, ordering: .relaxed) }
            guard let asleep = runs.last else { return fail("\(activity) outside a run") }
            if asleep { fail("\(activity) while asleep") }
        case .beforeWaiting:
            sleeps.add(1, ordering: .relaxed)
            guard let asleep = runs.last else { return fail("beforeWaiting outside a run") }
            if asleep { fail("beforeWaiting twice without afterWaiting") }
            runs[runs.count - 1] = true
        case .afterWaiting:
            wakes.add(1, ordering: .relaxed)
            guard let asleep = runs.last else { return fail("afterWaiting outside a run") }
            if !asleep { fail("afterWaiting without beforeWaiting") }
            runs[runs.count - 1] = false
        default:
            fail("unknown activity \(activity)")
        }
    }

    /// After the loop's thread exited: every run that started ended, and every sleep ended in a wake.
    func verifyFinished() {
        if !runs.isEmpty { fail("\(runs.count) run(s) never exited") }
        if sleeps.load(ordering: .relaxed) != wakes.load(ordering: .relaxed) {
            fail("\(sleeps.load(ordering: .relaxed)) beforeWaiting, \(wakes.load(ordering: .relaxed)) afterWaiting")
        }
    }

    /// Passes seen (beforeTimers).
    var passCount: Int { passes.load(ordering: .relaxed) }
    /// Sleeps seen (beforeWaiting).
    var sleepCount: Int { sleeps.load(ordering: .relaxed) }
    /// Runs entered inside another run.
    var nestedRunCount: Int { nestedEntries.load(ordering: .relaxed) }
    /// Runs entered.
    var entryCount: Int { entries.load(ordering: .relaxed) }

    private func fail(_ message: String) {
        Violations.shared.record("observer of \(label): \(message)")
    }
}
