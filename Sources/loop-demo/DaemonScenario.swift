import Glibc
import RunLoopKit
import RunLoopKitServices
import RunLoopKitSystem

/// A small service as systemd runs one: readiness and status sent to the notify socket (a stand-in socket when the
/// demo is not under systemd), watchdog keep-alives from the main loop's own passes, a stats timer that does not
/// keep the loop alive, the loop's metrics printed on SIGUSR1, and a graceful shutdown on SIGTERM that stops
/// accepting, refuses new requests and finishes the work in flight before `run` returns.
enum DaemonScenario {
    static func run() {
        do {
            try serve()
        } catch {
            Trace.line("main", "cannot start the service: \(error)")
        }
    }

    private static func serve() throws {
        let loop = Loop.main
        // Under systemd, NOTIFY_SOCKET and WATCHDOG_USEC come from the environment; otherwise a stand-in listens.
        let standIn = getenv("NOTIFY_SOCKET") == nil ? try NotifyStandIn() : nil
        let environment = standIn.map { ["NOTIFY_SOCKET": $0.path, "WATCHDOG_USEC": "200000"] }
        let notifier = SystemdNotifier(environment: environment)
        if let standIn { Trace.line("main", "not under systemd: a stand-in notify socket at \(standIn.path)") }

        let worker = try LoopThread(name: "worker")
        let service = try WorkService(loop: loop, worker: worker)
        let watchdog = try SystemdWatchdog.start(on: loop, notifier: notifier, environment: environment)
        let shutdown = try GracefulShutdown(loop: loop, threads: [worker], notifier: notifier)
        shutdown.onExit(order: 0) {
            service.stopAccepting()
            Trace.line("main", "exit handler 0: listener closed, new requests refused; the worker finishes its work")
        }
        shutdown.onExit(order: 1) {
            watchdog?.stop()
            Trace.line("main", "exit handler 1: watchdog keep-alives stopped")
        }
        let stats = try LoopTimer(after: .milliseconds(250), repeating: .milliseconds(250)) { _ in
            let counts = service.counts
            Trace.line("main", "stats: \(counts.received) received, \(counts.answered) answered")
        }
        stats.keepsRunAlive = false  // Statistics are no reason to keep serving.
        try loop.add(stats, to: .common)
        let started = loop.metrics
        let figures = try SignalSource(signal: SIGUSR1) { _, _ in
            let now = loop.metrics
            let busy = Trace.format(now.utilization(since: started) * 100, decimals: 1)
            Trace.line("main", "SIGUSR1: \(now.passes - started.passes) passes, \(busy)% awake since the start")
            let handled = now.handled
            Trace.line(
                "main",
                "         \(handled.descriptorReports) descriptor reports, \(handled.timersFired) timers, "
                    + "\(handled.blocksRun) blocks; longest pass \(now.longestPass)")
        }
        try loop.add(figures, to: .common)

        _ = try notifier.ready(status: "serving on 127.0.0.1:\(service.port)")
        Trace.line("main", "ready: serving on 127.0.0.1:\(service.port)")
        let client = JoinableThread { runClient(port: service.port, shutdown: shutdown, service: service) }

        let result = loop.run(in: .default, for: .seconds(30))  // A real daemon calls run(); the limit guards the demo.
        client.join()
        service.closeConnections()
        stats.invalidate()
        figures.invalidate()
        let counts = service.counts
        Trace.line(
            "main",
            "run returned \(result); exit status \(shutdown.exitStatus); \(counts.answered) answered, "
                + "\(counts.refused) refused")
        if let standIn {
            for message in standIn.messages { Trace.line("systemd", "got \(message)") }
            Trace.line("systemd", "got \(standIn.keepAlives) WATCHDOG=1 keep-alives, one per 100 ms while serving")
            standIn.close()
        }
    }

    /// The client: one quick request, SIGUSR1, an idle while, then a slow request that is still being worked on when SIGTERM
    /// arrives, and a request sent after it.
    private static func runClient(port: UInt16, shutdown: GracefulShutdown, service: WorkService) {
        guard let socket = EchoClient(port: port) else {
            Trace.line("client", "cannot connect")
            shutdown.begin()
            return
        }
        socket.send(Array("work 20\n".utf8))
        Trace.line("client", "sent \"work 20\", got \"\(socket.receiveLine() ?? "?")\"")
        kill(getpid(), SIGUSR1)
        usleep(450_000)  // An idle while: the stats timer and the watchdog go on, the loop sleeps between them.
        socket.send(Array("work 300\n".utf8))
        waitUntil { service.counts.received == 2 }
        Trace.line("client", "sent \"work 300\"; SIGTERM while it is being worked on")
        kill(getpid(), SIGTERM)
        waitUntil { shutdown.isShuttingDown }
        socket.send(Array("work 10\n".utf8))
        Trace.line("client", "sent \"work 10\" during the shutdown, got \"\(socket.receiveLine() ?? "?")\"")
        Trace.line("client", "then \"\(socket.receiveLine() ?? "?")\": the work in flight was finished")
        let refused = EchoClient(port: port) == nil
        Trace.line("client", "a new connection is refused: \(refused)")
        socket.close()
    }

    /// Waits, up to 10 s, until `condition` holds.
    private static func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<10_000 where !condition() { usleep(1_000) }
    }
}
