// line-service: a socket-activated systemd service on Loop.main, which answers a line protocol (see README.md).
import Glibc
import RunLoopKit
import RunLoopKitServices

let sockets = try SystemdSocketActivation.adopt()  // Empty when systemd passed no socket.
guard !sockets.isEmpty else {
    log("no listening socket; start it through line-service.socket or systemd-socket-activate")
    exit(EX_USAGE)
}
let notifier = SystemdNotifier()  // Reads NOTIFY_SOCKET; outside systemd every call does nothing.
let server = try LineServer(listeningOn: sockets.descriptors.map(\.descriptor))

// SIGTERM (systemctl stop) or SIGINT: STOPPING=1 goes to systemd, then the exit handler runs, then run() returns.
let shutdown = try GracefulShutdown(loop: .main, notifier: notifier)
Loop.main.assumeIsolated().onExit(of: shutdown) {
    log("shutting down")
    server.stop()
}

// WATCHDOG=1 from the loop's own passes: if a handler blocks the loop, systemd sees it and restarts the service.
if let watchdog = try SystemdWatchdog.start(on: .main, notifier: notifier) {
    log("watchdog keep-alives every \(watchdog.interval)")
}

// The one-line state `systemctl status line-service` shows, refreshed from the loop's figures.
let status = try Loop.main.assumeIsolated().makeTimer(after: .seconds(5), repeating: .seconds(5)) { _ in
    _ = try? notifier.status(server.statistics())
}
try Loop.main.add(status)

try notifier.ready(status: "serving")
log("ready")
Loop.main.run()  // Returns when the shutdown has finished.
log("stopped after \(server.statistics())")
exit(shutdown.exitStatus)

/// Writes `message` as one line to standard error, unbuffered, so the journal gets each line as it happens.
func log(_ message: String) {
    let line = "line-service: \(message)\n"
    _ = write(STDERR_FILENO, line, line.utf8.count)
}
