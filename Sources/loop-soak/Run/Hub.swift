import RunLoopKit
import Synchronization

/// A long-lived `LoopThread` that every kind of traffic targets: its loop has a second common mode and a private
/// mode, an observer of every activity, and a repeating timer that runs the loop nested, so items and blocks of the
/// common modes are also served inside nested runs.
///
/// Two kinds of hub: one runs its nested runs from the timer's handler, which keeps blocks in posting order; the
/// other alternately from the handler and from a block the timer posts, where (CF's rule, Docs/Reliability.md) a
/// nested run may run blocks posted after the rest of the running batch, so only exactly-once is checked for its
/// blocks, not their order. (Nested runs inside blocks alone would never serve blocks queued for the private mode:
/// those sit in the running batch, ahead of the nesting block, where a nested run does not see them.)
final class Hub: Sendable {
    /// A common mode besides the default one: items and blocks of ``Loop/Mode/common`` are served in it.
    static let nestedMode: Loop.Mode = "soak.nested"
    /// A mode that is not common: only its own items and blocks are served there, in nested runs.
    static let privateMode: Loop.Mode = "soak.private"

    /// The hub's name, also its thread's.
    let name: String
    /// The worker thread.
    let thread: LoopThread
    /// Whether blocks posted to this hub from one thread run in posting order.
    let keepsBlockOrder: Bool
    /// What the hub's observer saw.
    let activities: ActivityLedger

    private let nester: LoopTimer
    private let nestedRuns: Tally

    /// How deep the hub's own nested runs are at the moment (they nest at most two deep), and how often its timer
    /// fired. Hub thread only.
    private final class Depth: @unchecked Sendable {  // Unchecked: touched by the hub's thread only.
        var value = 0
        var fires = 0
    }

    /// The worker's loop.
    var loop: Loop { thread.loop }

    /// Starts a hub called `name`; `nestsInsideBlocks` picks where its nested runs start.
    init(name: String, nestsInsideBlocks: Bool, nestedRuns: Tally) throws {
        self.name = name
        self.nestedRuns = nestedRuns
        keepsBlockOrder = !nestsInsideBlocks
        thread = try LoopThread(name: name)
        let activities = ActivityLedger(name, joinsMidRun: true)
        self.activities = activities
        let interval = Duration.milliseconds(5)
        let depth = Depth()
        nester = try LoopTimer(after: interval, repeating: interval, tolerance: .milliseconds(1)) { _ in
            depth.fires += 1
            if nestsInsideBlocks && depth.fires % 2 == 0 {
                Loop.current.perform(in: .common) { Hub.runNested(depth, nestedRuns) }
            } else {
                Hub.runNested(depth, nestedRuns)
            }
        }
        let nester = nester
        try thread.performAndWait {
            let loop = Loop.current
            loop.addCommonMode(Hub.nestedMode)
            try loop.add(activities.makeObserver(), to: .common)
            try loop.add(nester)  // The default mode only: nested runs do not nest further from it.
        }
    }

    /// Runs the current loop nested: in the second common mode for up to half a millisecond, one pass of the
    /// default mode, and the private mode until a source is handled or a millisecond passed.
    private static func runNested(_ depth: Depth, _ tally: Tally) {
        guard depth.value < 2 else { return }
        depth.value += 1
        defer { depth.value -= 1 }
        let loop = Loop.current
        _ = loop.run(in: nestedMode, for: .microseconds(500))
        _ = loop.run(in: .default, for: .zero)
        _ = loop.run(in: privateMode, for: .milliseconds(1), returnAfterSourceHandled: true)
        tally.deliver(3)
    }

    /// Stops the hub's thread (blocks already accepted still run) and checks its observer's record.
    func stop() {
        nester.invalidate()
        thread.stop()
        activities.verifyFinished()
    }
}
