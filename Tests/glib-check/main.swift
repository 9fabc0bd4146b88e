// The GLib bridge on the process's real main thread: Dispatch's main queue, the main actor, GLib's default context,
// a child watch and GIO. Tests/RunLoopKitTests/GLib/GLibMainThreadTests.swift runs one scenario per process and reads
// the last line: "PASS <scenario> <figures>" (exit 0) or "FAIL <scenario>: <why>" (exit 1).
import Glibc
import RunLoopKit

let scenarios: [String: () -> Void] = [
    "attached": attachedScenario,
    "idle-attached": idleAttachedScenario,
    "driven": drivenScenario,
    "idle-driven": idleDrivenScenario,
]

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 1, let name = arguments.first, let scenario = scenarios[name] else {
    print("usage: glib-check <scenario>; scenarios: \(scenarios.keys.sorted().joined(separator: ", "))")
    exit(2)
}
guard Loop.main.isCurrent else { fail("not on the main thread") }
scenario()
