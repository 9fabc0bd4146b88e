import Glibc
import RunLoopKit
import TestSupport
import Testing

/// Misuse that is a programming error traps with a message: checked in child processes (exit tests).
@Suite struct MisuseTrapTests {
    private static func stderrText(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    /// A run of another thread's loop: with a time limit or unbounded, and what each traps with.
    enum Run: String, Codable, Sendable, CaseIterable, CustomTestStringConvertible {
        case timed = "run(in:for:)"
        case unbounded = "run()"

        var trapMessage: String {
            switch self {
            case .timed: "must be called on the loop's own thread"
            case .unbounded: "Loop.run() must be called on the loop's own thread"
            }
        }

        var testDescription: String { rawValue }
    }

    @Test(arguments: Run.allCases)
    func runningAnotherThreadsLoopTraps(_ run: Run) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [run] in
            let running = ItemsSupport.startRunningLoop()
            switch run {
            case .timed: running.loop.run(in: .default, for: .zero)
            case .unbounded: running.loop.run()
            }
        }
        #expect(Self.stderrText(result).contains(run.trapMessage))
    }

    /// `Loop.main` run from a Swift task off the main thread (what a top-level `await` in main.swift does to the
    /// program's main) traps naming that cause and both fixes.
    @Test func runningTheMainLoopFromATaskOffTheMainThreadNamesTheAsyncMainCause() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await Task.detached { Loop.main.run() }.value
        }
        let text = Self.stderrText(result)
        #expect(text.contains("Loop.run() must be called on the loop's own thread"))
        #expect(text.contains("top-level `await` in main.swift"))
        #expect(text.contains("RunLoopKitAsyncMain"))
        #expect(text.contains("Loop.main.run() at its end"))
    }

    /// `Loop.main` run from a plain thread that is not the main thread says so and how to reach the main loop.
    @Test func runningTheMainLoopFromAnotherThreadSaysWhoseThreadItIs() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let thread = TestThread { Loop.main.run() }
            thread.join()
        }
        let text = Self.stderrText(result)
        #expect(text.contains("Loop.main belongs to the process's main thread: call it from the main thread"))
        #expect(!text.contains("RunLoopKitAsyncMain"))
    }

    /// A host pass in `.common` would run nothing and leave the host waiting for good: it traps, saying why.
    @Test func aHostPassInTheCommonModesTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Loop.current.runPass(in: .common)
        }
        #expect(Self.stderrText(result).contains("runPass(in: .common) runs nothing"))
    }

    /// A `LoopBound` touched off its loop's thread traps, naming the loop, the calling thread and the misuse.
    @Test func aLoopBoundTouchedOffItsLoopsThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let running = ItemsSupport.startRunningLoop()
            let bound = LoopBound(0, on: running.loop)
            bound.value += 1  // This thread is not the loop's.
        }
        let text = Self.stderrText(result)
        #expect(text.contains("a LoopBound<Int> bound to the loop of thread"))
        #expect(text.contains("was written on thread"))
        #expect(text.contains("touch its value only on that loop's thread"))
    }
}
