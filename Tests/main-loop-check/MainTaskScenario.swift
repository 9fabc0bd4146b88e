import Dispatch
import Glibc
import RunLoopKit

/// The way to write an app on RunLoopKit: a synchronous main.swift starts its async work with
/// `Task { @MainActor in … }` and hands the main thread to `Loop.main.run()`. Every resumption of that task (after
/// a main-actor sleep, a hop to a detached task, a loop-timer-driven continuation) runs on the main thread inside
/// the loop's passes; the task ends the program by stopping the loop.
func mainTaskScenario() {
    let report = Shared<[String]>([])
    func note(_ step: String) {
        let line = "\(step): main-thread=\(onMainThread) in-run=\(Loop.main.currentMode != nil)"
        print(line)
        report.withLock { $0.append(line) }
    }
    Task { @MainActor in
        note("task start")
        try await Task.sleep(for: .milliseconds(20))
        note("after Task.sleep")
        let answer = await Task.detached { onMainThread ? -1 : 42 }.value
        note("after detached task (\(answer))")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let timer = try! LoopTimer(after: .milliseconds(10)) { _ in continuation.resume() }
            try! Loop.main.add(timer)
        }
        note("after a loop timer")
        Loop.main.stop()
    }
    Loop.main.run()
    note("run returned")
    let lines = report.value
    check(lines.count == 5, "only \(lines.count) steps ran")
    check(lines.dropLast().allSatisfy { $0.hasSuffix("main-thread=true in-run=true") }, "a step ran elsewhere")
    check(lines.last!.hasSuffix("main-thread=true in-run=false"), "run() returned oddly: \(lines.last!)")
    pass("steps=\(lines.count)")
}
