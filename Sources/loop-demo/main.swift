import Glibc
import RunLoopKit

/// One demo scenario: a name for the command line, a line for the usage text, and what it runs.
struct Scenario {
    let name: String
    let summary: String
    let run: () -> Void
}

let scenarios: [Scenario] = [
    Scenario(
        name: "pingpong", summary: "two threads signal each other's custom sources",
        run: PingPongScenario.run),
    Scenario(
        name: "trace", summary: "an observer prints every activity while the loop switches modes",
        run: TraceScenario.run),
    Scenario(
        name: "phases", summary: "tasks at nextPassBegins, currentPassEnds and idle",
        run: PhasesScenario.run),
    Scenario(
        name: "stall", summary: "a 300 ms stall on the main loop reported by the StallMonitor",
        run: StallScenario.run),
    Scenario(
        name: "worker", summary: "a keep-alive LoopThread serves requests from several threads, then stops cleanly",
        run: WorkerScenario.run),
    Scenario(
        name: "batch", summary: "PassWorkQueue: 20 tasks, 2 per pass, a timer in between",
        run: BatchScenario.run),
    Scenario(
        name: "commit", summary: "CommitBeforeSleep: updates coalesced and committed before sleep",
        run: CommitScenario.run),
    Scenario(
        name: "concurrency",
        summary:
            "DispatchQueue.main, @MainActor, an actor and a task executor preference on a LoopThread, a loop clock",
        run: ConcurrencyScenario.run),
    Scenario(
        name: "echo", summary: "a TCP echo server on descriptor sources, with write backpressure",
        run: EchoScenario.run),
    Scenario(
        name: "daemon",
        summary: "a TCP service with systemd readiness, watchdog, SIGUSR1 figures and graceful shutdown on SIGTERM",
        run: DaemonScenario.run),
    Scenario(
        name: "glib",
        summary: "GLib and @MainActor code sharing the main thread, GLib's main loop or Loop.main running",
        run: GLibScenario.run),
]

@MainActor
func usage() -> String {
    var text = "usage: loop-demo [scenario]\n\n"
    text += "Runs every scenario in turn, or only the one named. Scenarios:\n"
    let width = scenarios.map(\.name.count).max() ?? 0
    for scenario in scenarios {
        text += "  \(Trace.pad(scenario.name, -width)) \(scenario.summary)\n"
    }
    text += "\nOptions:\n  -h, --help  print this help\n"
    return text
}

/// Writes `text` to descriptor 2, unbuffered.
func printToStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
}

let arguments = Array(CommandLine.arguments.dropFirst())
var selected: [Scenario] = scenarios
switch arguments.count {
case 0:
    break
case 1 where arguments[0] == "--help" || arguments[0] == "-h":
    print(usage(), terminator: "")
    exit(0)
case 1:
    guard let scenario = scenarios.first(where: { $0.name == arguments[0] }) else {
        printToStandardError("loop-demo: unknown scenario '\(arguments[0])'\n\n\(usage())")
        exit(2)
    }
    selected = [scenario]
default:
    printToStandardError("loop-demo: expected at most one scenario, got \(arguments.count) arguments\n\n\(usage())")
    exit(2)
}

let start = Loop.Instant.now
for scenario in selected {
    Trace.heading("\(scenario.name): \(scenario.summary)")
    Trace.restartClock()
    scenario.run()
}
let total = Double(Loop.Instant.now.nanoseconds - start.nanoseconds) / 1_000_000
let plural = selected.count == 1 ? "" : "s"
print("\nloop-demo: \(selected.count) scenario\(plural) done in \(Trace.format(total, decimals: 0)) ms")
exit(0)
