// A test executable for what only the process's real main thread can show: Dispatch's main queue and the main
// actor served by `Loop.main`. Tests/RunLoopKitTests/Core/MainQueueTests.swift runs one scenario per
// process and reads the last line: "PASS <scenario> <figures>" (exit 0) or "FAIL <scenario>: <why>" (exit 1).
import Dispatch
import Glibc
import RunLoopKit
import Synchronization

let scenarios: [String: () -> Void] = [
    "wake": wakeScenario,
    "main-actor": mainActorScenario,
    "non-common-mode": nonCommonModeScenario,
    "fifo": fifoScenario,
    "stress": stressScenario,
    "nested-run": nestedRunScenario,
    "handled-source": handledSourceScenario,
    "main-task": mainTaskScenario,
    "opt-out": optOutScenario,
    "script-ends": scriptEndsScenario,
    "assume-isolated": assumeIsolatedScenario,
    "main-actor-handlers": mainActorHandlersScenario,
    "poll-interrupted": pollInterruptedScenario,
    "poll-fails": pollFailsScenario,
    "host-serves-main-queue": hostServesMainQueueScenario,
    "drained-behind-the-loop": drainedBehindTheLoopScenario,
    "hand-over-latency": handOverLatencyScenario,
]

runScenario(of: "main-loop-check", from: scenarios)
