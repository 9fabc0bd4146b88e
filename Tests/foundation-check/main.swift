// The Foundation bridge on the process's real main thread, with the real Foundation: Dispatch's main queue,
// Foundation's Timer, RunLoop.perform, NotificationQueue and FileHandle notifications next to Loop.main's items.
// Tests/RunLoopKitFoundationTests/FoundationMainThreadTests.swift runs one scenario per process and reads the last
// line: "PASS <scenario> <figures>" (exit 0) or "FAIL <scenario>: <why>" (exit 1).
import Foundation
import RunLoopKit

let scenarios: [String: () -> Void] = [
    "foundation-owns": foundationOwnsScenario,
    "loop-owns": loopOwnsScenario,
    "idle-foundation-owns": { idleScenario(foundationOwns: true) },
    "idle-loop-owns": { idleScenario(foundationOwns: false) },
    "unbridged": unbridgedScenario,
    "same-thread-foundation-owns": { sameThreadScenario(foundationOwns: true) },
    "same-thread-loop-owns": { sameThreadScenario(foundationOwns: false) },
    "latency": latencyScenario,
    "pass-rules-foundation-owns": passRulesFoundationOwnsScenario,
    "pass-rules-nested-own-run": passRulesNestedOwnRunScenario,
]
/// swift-corelibs-foundation's own tests (Upstream/), per owner of the thread and setting of the loop.
var allScenarios = scenarios
for owner in [UpstreamOwner.foundation, .loop] {
    for setting in [UpstreamSetting.unbridged, .bridged, .items] {
        allScenarios["upstream-\(owner.rawValue)-owns-\(setting.rawValue)"] = {
            upstreamScenario(owner: owner, setting: setting)
        }
    }
}

runScenario(of: "foundation-check", from: allScenarios)
