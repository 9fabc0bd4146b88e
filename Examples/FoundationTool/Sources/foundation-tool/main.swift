// foundation-tool: a Foundation command-line tool as it comes from macOS (Process, Timer, NotificationCenter,
// RunLoop.main.run), with RunLoopKit's Loop.main on the same thread through the Foundation bridge. See README.md.
import Foundation
import RunLoopKit
import RunLoopKitFoundation

// The one line the port needs: Loop.main's items now run inside RunLoop.main's iterations, and the other way round.
try Loop.main.bridgeToFoundation()

let arguments = Array(CommandLine.arguments.dropFirst())
let command =
    arguments.isEmpty ? ["sh", "-c", "for step in 1 2 3 4 5; do echo step $step; sleep 0.1; done"] : arguments
let watcher = CommandWatcher(command: command)
print("foundation-tool: running \(command.joined(separator: " "))")
do {
    try watcher.start()
} catch {
    print("foundation-tool: cannot start: \(error)")
    exit(1)
}

// As on macOS: Foundation's run loop runs the thread, one batch of events at a time, until the work is done.
while !watcher.isFinished && RunLoop.main.run(mode: .default, before: .distantFuture) {}
exit(watcher.exitStatus)
