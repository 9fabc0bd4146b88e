import Glibc
import RunLoopKit
import TestSupport
import Testing

/// `LoopThread.perform(in: [Loop.Mode], _:)` and `performAndWait(in: [Loop.Mode], _:)`: blocks that may run in any
/// of several modes.
@Suite struct LoopThreadModeListTests {
    static let tracking: Loop.Mode = "tracking"

    /// Starts a nested run of `tracking` on `worker` (kept alive by a far timer) and waits until the worker sleeps
    /// in it; answers the box that receives the nested run's result.
    static func startNestedTrackingRun(on worker: LoopThread) throws -> (Box<Loop.RunResult>, LoopTimer) {
        let keepAlive = try LoopTimer(after: .seconds(3600)) { _ in }
        try worker.loop.add(keepAlive, to: tracking)
        let result = Box<Loop.RunResult>()
        worker.perform {
            result.value = Loop.current.run(in: tracking, for: .seconds(30))
        }
        #expect(waitUntil { worker.loop.currentMode == tracking && worker.loop.isWaiting })
        return (result, keepAlive)
    }

    @Test func aBlockForTrackingAndDefaultRunsInANestedTrackingRun() throws {
        let worker = try LoopThread(name: "lt-modes")
        defer { worker.stop() }
        let (nested, keepAlive) = try Self.startNestedTrackingRun(on: worker)
        defer { keepAlive.invalidate() }

        let ranIn = Box<Loop.Mode>()
        worker.perform(in: [Self.tracking, .default]) {
            ranIn.value = Loop.current.currentMode
            Loop.current.stop()  // Ends the nested run: it returns only because this block ran inside it.
        }
        #expect(waitUntil { nested.value != nil })
        #expect(ranIn.value == Self.tracking)
        #expect(nested.value == .stopped)
    }

    @Test func performAndWaitForTrackingAndDefaultReturnsFromANestedTrackingRun() throws {
        let worker = try LoopThread(name: "lt-modeswait")
        defer { worker.stop() }
        let (nested, keepAlive) = try Self.startNestedTrackingRun(on: worker)
        defer { keepAlive.invalidate() }

        // A single-mode call for the default mode would wait until the nested run ends (in 30 s).
        let mode = try worker.performAndWait(in: [Self.tracking, .default]) { Loop.current.currentMode }
        #expect(mode == Self.tracking)
        #expect(nested.value == nil)  // Served by the nested run, which is still going.

        worker.perform(in: [Self.tracking]) { Loop.current.stop() }
        #expect(waitUntil { nested.value != nil })
        #expect(nested.value == .stopped)
    }

    @Test func aBlockForSeveralModesRunsInTheWorkersDefaultRun() throws {
        let worker = try LoopThread(name: "lt-modesdef")
        defer { worker.stop() }
        let mode = try worker.performAndWait(in: ["elsewhere", .default]) { Loop.current.currentMode }
        #expect(mode == .default)
        let common = try worker.performAndWait(in: ["elsewhere", .common]) { Loop.current.currentMode }
        #expect(common == .default)
    }

    @Test func anEmptyModeListIsRejected() throws {
        let worker = try LoopThread(name: "lt-nomodes")
        defer { worker.stop() }
        let ran = Counter()
        #expect(!worker.perform(in: []) { ran.increment() })  // Refused, as Loop.perform(in: []) is.
        let waited = #expect(throws: LoopError.self) { try worker.performAndWait(in: []) { ran.increment() } }
        #expect(waited?.code == .invalidArgument)
        // On the worker too, where performAndWait would otherwise run the block inline.
        let inline = try worker.performAndWait {
            do {
                try worker.performAndWait(in: []) { ran.increment() }
                return LoopError.Code?.none
            } catch let error as LoopError {
                return error.code
            }
        }
        #expect(inline == .invalidArgument)
        #expect(ran.current == 0)
        // Still serving.
        #expect(try worker.performAndWait(in: [.default]) { 7 } == 7)
    }

    @Test func blocksForSeveralModesAdmittedBeforeStopAllRun() throws {
        let worker = try LoopThread(name: "lt-modesdrain")
        let order = Recorder<String>()
        // The first block holds the worker until the stop has begun, so the others are only run by the drain.
        worker.perform {
            _ = waitUntil { worker.isStopped }
            order.append("hold")
        }
        @Sendable func record(_ name: String) { order.append("\(name) in \(Loop.current.currentMode?.name ?? "-")") }
        worker.perform(in: ["b", "a"]) { record("b-or-a") }
        worker.perform(in: ["z", .common]) { record("z-or-common") }
        worker.stop()
        // The default run serves the block that may run there; the other runs in a pass of its first mode by name.
        #expect(order.all == ["hold", "z-or-common in default", "b-or-a in a"])
        #expect(!worker.perform(in: ["a", "b"]) {})  // Refused once the stop began.
    }
}
