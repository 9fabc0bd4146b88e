import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKitServices

/// The notify protocol against a real datagram socket standing in for systemd, and the watchdog's keep-alives from
/// a loop's passes.
@Suite struct SystemdNotifierTests {
    @Test(arguments: [false, true])
    func messagesReachAPathOrAnAbstractSocket(abstract: Bool) throws {
        let manager = NotifySocketStandIn(abstract: abstract)
        defer { manager.close() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": manager.address])
        #expect(notifier.isEnabled)
        #expect(try notifier.ready(status: "Serving"))
        #expect(manager.receive() == "READY=1\nSTATUS=Serving")
        try notifier.stopping()
        #expect(manager.receive() == "STOPPING=1")
        try notifier.mainProcess(4242)
        #expect(manager.receive() == "MAINPID=4242")
        try notifier.reloading()
        let reloading = manager.receive() ?? ""
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        let microseconds = Int64(reloading.split(separator: "=").last ?? "") ?? 0
        let now = MonotonicClock.now() / 1_000
        #expect(microseconds > 0 && microseconds <= now && now - microseconds < 10_000_000)
    }

    /// A failed send is `systemCallFailed` with its `errno`, whatever it is, for a plain message (`sendto`) and one
    /// passing descriptors (`sendmsg`): `EPERM` and `EEXIST` came out as `descriptorNotPollable` and
    /// `descriptorAlreadyRegistered`, the codes of a descriptor's registration. In a child process: the fault script
    /// is process-wide.
    @Test(arguments: [EPERM, EEXIST, EACCES, ENOENT])
    func aFailedSendIsSystemCallFailedWithItsErrno(_ code: CInt) async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [code] in
            let manager = NotifySocketStandIn()
            defer { manager.close() }
            let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": manager.address])
            let sends: [(String, () throws(LoopError) -> Void)] = [
                ("sendto", { () throws(LoopError) in _ = try notifier.ready() }),
                ("sendmsg", { () throws(LoopError) in _ = try notifier.storeDescriptors([0], name: "kept") }),
            ]
            var failures = 0
            for (call, send) in sends {
                let (error, counts) = FaultInjection.with([.init(call, code)]) { () -> LoopError? in
                    do throws(LoopError) {
                        try send()
                        return nil
                    } catch {
                        return error
                    }
                }
                if counts != [1] || error?.code != .systemCallFailed || error?.errno != code {
                    print("\(call) errno \(code): hit \(counts), threw \(String(describing: error))")
                    failures += 1
                }
            }
            fflush(nil)
            exit(failures == 0 ? 0 : 1)
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        #expect(result?.exitStatus == .exitCode(0), "\(output)")
    }

    @Test func withoutNotifySocketNothingIsSent() throws {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        #expect(try notifier.ready() == false)
        #expect(try SystemdWatchdog.start(environment: [:]) == nil)
    }

    @Test func badAddressesAndMessagesThrowTypedErrors() {
        let cases: [(String, [String], LoopError.Code)] = [
            ("relative/path", ["READY=1"], .invalidArgument),
            ("vsock:2:1234", ["READY=1"], .invalidArgument),
            ("/" + String(repeating: "x", count: 200), ["READY=1"], .invalidArgument),
            ("/tmp/runloopkit-nobody-listens-\(getpid()).sock", ["READY=1"], .systemCallFailed),
            ("/tmp/x.sock", [], .invalidArgument),
            ("/tmp/x.sock", ["READY=1\nSTOPPING=1"], .invalidArgument),
            ("/tmp/x.sock", ["=1"], .invalidArgument),
            ("/tmp/x.sock", ["READY"], .invalidArgument),
        ]
        for (address, assignments, code) in cases {
            do throws(LoopError) {
                try SystemdNotifier(environment: ["NOTIFY_SOCKET": address]).notify(assignments)
                Issue.record("\(address) \(assignments): no error")
            } catch {
                #expect(error.code == code, "\(address) \(assignments): \(error)")
            }
        }
    }

    /// `WATCHDOG_USEC=200000`: a keep-alive at once, then one every 100 ms from the loop's passes; none while a
    /// handler stalls the loop for 600 ms, and no burst after it (missed fire times are skipped).
    @Test func theWatchdogFollowsTheLoopsPassesAndFallsSilentWhileItStalls() throws {
        let manager = NotifySocketStandIn()
        defer { manager.close() }
        let environment = ["NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "\(getpid())"]
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        let watchdog = try #require(try SystemdWatchdog.start(on: running.loop, environment: environment))
        #expect(watchdog.interval == .milliseconds(100))
        var arrivals: [ContinuousClock.Instant] = []
        for _ in 0..<4 {
            #expect(manager.receive(timeout: .seconds(5)) == "WATCHDOG=1")
            arrivals.append(.now)
        }
        running.loop.perform { usleep(600_000) }  // The stall the watchdog exists to catch.
        var gaps: [Duration] = []
        for _ in 0..<4 {
            #expect(manager.receive(timeout: .seconds(5)) == "WATCHDOG=1")
            gaps.append(.now - arrivals.last!)
            arrivals.append(.now)
        }
        watchdog.stop()
        let longest = gaps.max() ?? .zero
        #expect(longest >= .milliseconds(450), "no silence during the 600 ms stall: gaps \(gaps)")
        // After the stall: one keep-alive, then the 100 ms rhythm again, not a burst for the missed ones.
        #expect(gaps.filter { $0 < .milliseconds(30) }.count <= 1, "a burst after the stall: gaps \(gaps)")
        #expect(watchdog.lastError == nil)
    }

    @Test func aWatchdogForAnotherProcessOrABadIntervalIsRefused() throws {
        #expect(try SystemdWatchdog.start(environment: ["WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"]) == nil)
        #expect(throws: LoopError.self) {
            try SystemdWatchdog.start(environment: ["WATCHDOG_USEC": "soon"])
        }
    }
}
