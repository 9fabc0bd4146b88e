import TestSupport
import Testing

/// An async entry point linked with RunLoopKitAsyncMain: its main actor is served by `Loop.main` on the real main
/// thread (the `async-main-check` executable, in a child process). This also guards the runtime hook the product
/// relies on: a toolchain that stops calling it fails here.
@Suite struct AsyncMainTests {
    @Test func everyAwaitInAnAsyncMainResumesOnTheMainThreadInsideLoopMain() throws {
        let (status, output) = try TestExecutable.run("async-main-check")
        let lines = output.split(separator: "\n").map(String.init)
        let steps = lines.filter { $0.hasPrefix("after ") }
        #expect(status == 0, "\(output)")
        #expect(steps.count == 5, "\(output)")
        for step in steps {
            #expect(step.hasSuffix("main thread, Loop.main.isCurrent=true, in a run of Loop.main (default)"), "\(step)")
        }
        #expect(lines.contains("hook installed: true, took the main thread: true"), "\(output)")
        #expect(lines.last == "returning from main", "\(output)")
    }

    @Test func exitInsideAnAsyncMainEndsTheProcessWithItsStatus() throws {
        let (status, output) = try TestExecutable.run("async-main-check", arguments: ["exit-7"])
        #expect(status == 7, "\(output)")
    }
}
