// The GLib bridge on the process's real main thread: Dispatch's main queue, the main actor, GLib's default context,
// a child watch and GIO. Tests/RunLoopKitGLibTests/GLibMainThreadTests.swift runs one scenario per process and reads
// the last line: "PASS <scenario> <figures>" (exit 0) or "FAIL <scenario>: <why>" (exit 1).
import Glibc
import RunLoopKit

let scenarios: [String: () -> Void] = [
    "attached": attachedScenario,
    "idle-attached": idleAttachedScenario,
    "driven": drivenScenario,
    "idle-driven": idleDrivenScenario,
    "pass-rules-attached": passRulesAttachedScenario,
    "pass-rules-modal": passRulesModalScenario,
    "pass-rules-modal-callback": passRulesModalCallbackScenario,
    "pass-rules-between-runs": passRulesBetweenRunsScenario,
]

runScenario(of: "glib-check", from: scenarios)
