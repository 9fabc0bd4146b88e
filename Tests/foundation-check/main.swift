// The Foundation bridge on the process's real main thread, with the real Foundation: Dispatch's main queue,
// Foundation's Timer, RunLoop.perform, NotificationQueue and FileHandle notifications next to Loop.main's items.
// Tests/RunLoopKitTests/Foundation/FoundationMainThreadTests.swift runs one scenario per process and reads the last
// line: "PASS <scenario> <figures>" (exit 0) or "FAIL <scenario>: <why>" (exit 1).
import Foundation
import RunLoopKit

let scenarios: [String: () -> Void] = [
    "foundation-owns": foundationOwnsScenario,
    "loop-owns": loopOwnsScenario,
    "idle-foundation-owns": { idleScenario(foundationOwns: true) },
    "idle-loop-owns": { idleScenario(foundationOwns: false) },
    "unbridged": unbridgedScenario,
    "latency": latencyScenario,
]

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 1, let name = arguments.first, let scenario = scenarios[name] else {
    print("usage: foundation-check <scenario>; scenarios: \(scenarios.keys.sorted().joined(separator: ", "))")
    exit(2)
}
guard Loop.main.isCurrent else { fail("not on the main thread") }
scenario()
