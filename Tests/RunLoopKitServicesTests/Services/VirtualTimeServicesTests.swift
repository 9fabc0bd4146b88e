import RunLoopKit
import RunLoopKitServices
import RunLoopKitSystem
import TestSupport
import Testing

/// The services that keep time do so on their loop's clock: on a loop on virtual time, a shutdown's drain deadline
/// and the systemd watchdog's keep-alives come at virtual instants, with no waiting.
@Suite struct VirtualTimeServicesTests {
    @Test func aShutdownsDrainDeadlineExpiresOnTheVirtualClock() throws {
        let gate = Semaphore()
        let worker = try LoopThread(name: "stuck worker")
        worker.perform { gate.wait() }  // A worker that will not finish its work before the deadline.
        try Loop.withVirtualTime(advancesWhenIdle: false) { loop in
            let shutdown = try GracefulShutdown(
                loop: loop, signals: [], threads: [worker], threadDeadline: .seconds(10),
                notifier: SystemdNotifier(environment: [:]))
            #expect(shutdown.begin())
            try loop.advance(by: .milliseconds(9_999))
            #expect(shutdown.isShuttingDown)
            #expect(shutdown.exitStatus == GracefulShutdown.cleanExitStatus)  // Not decided yet.
            try loop.advance(by: .milliseconds(1))
            #expect(shutdown.exitStatus == GracefulShutdown.drainTimedOutExitStatus)
        }
        gate.post()
        worker.stop()
    }

    @Test func theWatchdogSendsAKeepAliveEveryHalfPeriodOfVirtualTime() throws {
        let manager = NotifySocketStandIn()
        defer { manager.close() }
        try Loop.withVirtualTime { loop in
            let environment = ["NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "600000000"]  // 10 minutes.
            let watchdog = try #require(try SystemdWatchdog.start(on: loop, environment: environment))
            defer { watchdog.stop() }
            #expect(watchdog.interval == .seconds(300))
            #expect(watchdog.keepAlivesSent == 1)  // The first, at once.
            #expect(manager.receive(timeout: .seconds(10)) == "WATCHDOG=1")
            try loop.advance(by: .seconds(299))
            #expect(watchdog.keepAlivesSent == 1)
            // Each keep-alive is read before the next is due: a datagram socket's queue holds as few as 10
            // (net.unix.max_dgram_qlen), and a sender blocks once it is full.
            for sent in 2...13 {
                let dueBy = Int64(300 * (sent - 1) + 30)  // Every 300 s, with its 30 s tolerance.
                try loop.advance(to: Loop.Instant(nanoseconds: dueBy * 1_000_000_000))
                #expect(watchdog.keepAlivesSent == sent, "by \(dueBy) s")
                #expect(manager.receive(timeout: .seconds(10)) == "WATCHDOG=1")
            }
            #expect(watchdog.lastError == nil)
        }
    }
}
