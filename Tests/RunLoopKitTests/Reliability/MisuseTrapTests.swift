import Glibc
import RunLoopKit
import Testing

/// Misuse that is a programming error traps with a message: checked in child processes (exit tests).
@Suite struct MisuseTrapTests {
    private static func stderrText(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func runningAnotherThreadsLoopTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let running = ItemsSupport.startRunningLoop()
            running.loop.run(in: .default, for: .zero)
        }
        #expect(Self.stderrText(result).contains("must be called on the loop's own thread"))
    }

    @Test func runningAnotherThreadsLoopUnboundedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let running = ItemsSupport.startRunningLoop()
            running.loop.run()
        }
        #expect(Self.stderrText(result).contains("Loop.run() must be called on the loop's own thread"))
    }

}
