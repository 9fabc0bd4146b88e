import Glibc
import RunLoopKit
import TestSupport
import Testing

@testable import RunLoopKitServices

/// The shutdown helper, end to end. Signals are process-wide, so each scenario runs in an exit-test child, with the
/// service's loop on a thread of its own.
@Suite struct GracefulShutdownTests {
    /// Runs `setUp`'s service on a new thread's loop until the shutdown ends its run; answers what `run()` answered.
    static func serve(
        _ setUp: @escaping @Sendable (Loop) -> GracefulShutdown
    ) -> (thread: TestThread, shutdown: Box<GracefulShutdown>, result: Box<Loop.RunResult>) {
        let shutdown = Box<GracefulShutdown>()
        let result = Box<Loop.RunResult>()
        let thread = TestThread {
            SignalSupport.unblock([SIGTERM, SIGINT])
            let loop = Loop.current
            shutdown.value = setUp(loop)
            try! loop.add(ItemsSupport.keepAlive())
            result.value = loop.run(in: .default, for: .seconds(60))
        }
        SignalSupport.check(waitUntil { shutdown.value != nil }, "the service never started")
        return (thread, shutdown, result)
    }

    @Test func aSignalRunsTheExitHandlersInOrderStopsTheWorkersAndEndsTheRun() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let manager = NotifySocketStandIn()
            let worker = try! LoopThread(name: "worker")
            let finishedWork = Counter()
            let order = Recorder<String>()
            let service = Self.serve { loop in
                let shutdown = try! GracefulShutdown(
                    loop: loop, threads: [worker],
                    notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": manager.address]))
                shutdown.onExit(order: 3) { order.append("three") }
                shutdown.onExit(order: 1) { order.append("one") }
                shutdown.onExit(order: 2) { order.append("two") }
                return shutdown
            }
            worker.perform {
                usleep(100_000)  // Accepted before the shutdown: it must finish.
                finishedWork.increment()
            }
            SignalSupport.sendToSelf(SIGTERM)
            service.thread.join()
            let shutdown = service.shutdown.value!
            SignalSupport.check(
                service.result.value == .stopped, "run answered \(String(describing: service.result.value))")
            SignalSupport.check(order.all == ["one", "two", "three"], "exit handlers ran \(order.all)")
            SignalSupport.check(worker.isStopped && finishedWork.current == 1, "the worker was not drained")
            SignalSupport.check(shutdown.exitStatus == 0 && shutdown.signal == SIGTERM, "status \(shutdown.exitStatus)")
            SignalSupport.check(manager.receive() == "STOPPING=1", "no STOPPING=1")
            manager.close()
            print("verdict: ok")
            exit(0)
        }
        #expect(SignalSupport.output(result).contains("verdict: ok"))
    }

    @Test func workersThatOutstayTheDeadlineGiveTheTimedOutStatus() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let worker = try! LoopThread(name: "slow")
            let service = Self.serve { loop in
                try! GracefulShutdown(
                    loop: loop, threads: [worker], threadDeadline: .milliseconds(200),
                    notifier: SystemdNotifier(environment: [:]))
            }
            worker.perform { usleep(3_000_000) }
            let started = ContinuousClock.now
            service.shutdown.value!.begin()
            service.thread.join()
            let took = ContinuousClock.now - started
            let shutdown = service.shutdown.value!
            SignalSupport.check(
                shutdown.exitStatus == GracefulShutdown.drainTimedOutExitStatus, "status \(shutdown.exitStatus)")
            SignalSupport.check(shutdown.signal == nil, "a signal was recorded")
            SignalSupport.check(took < .milliseconds(2_500), "the run outlasted the deadline: \(took)")
            print("verdict: ok")
            exit(0)
        }
        #expect(SignalSupport.output(result).contains("verdict: ok"))
    }

    /// `begin()` and `onExit` say whether they took effect (#29 item 6: before, both accepted the call and did
    /// nothing): a second `begin()` answers `false`, as does one for a loop whose thread exited (which can run no
    /// step, so the shutdown stays not begun); a handler added once the shutdown began is refused. No signal is
    /// watched, so no exit test is needed.
    @Test func beginAndOnExitAnswerWhetherTheyTookEffect() {
        let ran = Recorder<String>()
        let service = Self.serve { loop in
            let shutdown = try! GracefulShutdown(loop: loop, signals: [], notifier: SystemdNotifier(environment: [:]))
            #expect(shutdown.onExit { ran.append("before") })
            return shutdown
        }
        let shutdown = service.shutdown.value!
        #expect(shutdown.begin())
        #expect(!shutdown.begin())  // Under way already.
        service.thread.join()
        #expect(service.result.value == .stopped)
        #expect(!shutdown.onExit { ran.append("after") })  // Dropped, and it says so.
        #expect(ran.all == ["before"])

        let orphan = Box<GracefulShutdown>()
        TestThread {
            orphan.value = try! GracefulShutdown(
                loop: Loop.current, signals: [], notifier: SystemdNotifier(environment: [:]))
        }.join()
        #expect(!orphan.value!.begin())  // Nobody can run its steps.
        #expect(!orphan.value!.isShuttingDown)
    }

    /// A shutdown stuck in an exit handler: the second SIGTERM meets the default disposition and ends the process.
    @Test func aSecondSignalEndsTheProcessAtOnce() async {
        await #expect(processExitsWith: .signal(SIGTERM)) {
            let inHandler = ItemsSupport.Flag()
            _ = Self.serve { loop in
                let shutdown = try! GracefulShutdown(loop: loop, notifier: SystemdNotifier(environment: [:]))
                shutdown.onExit {
                    inHandler.set()
                    sleep(30)  // A handler that hangs.
                }
                return shutdown
            }
            SignalSupport.sendToSelf(SIGTERM)
            SignalSupport.check(waitUntil { inHandler.isSet }, "the exit handler never ran")
            SignalSupport.sendToSelf(SIGTERM)
            sleep(20)
            exit(0)  // Not reached: the second signal ends the process.
        }
    }
}
