import Glibc
import RunLoopKit
import RunLoopKitSystem
import TestSupport
import Testing

/// Every wrapped system call made to fail with every `errno` its manual page lists (``FaultMatrix``), through the
/// syscall layer's fault-injection seam (System/FaultInjection.swift, debug builds only). The script is
/// process-wide, so each test runs in an exit-test child: one child per scenario plays all its non-trapping cases
/// in turn; each case that must trap gets a child of its own, whose standard error must name the call and `errno`.
@Suite struct FaultInjectionTests {
    /// The scenarios with at least one case that must not trap.
    static let scenarios = FaultCase.Scenario.allCases.filter { scenario in
        FaultMatrix.cases.contains { $0.scenario == scenario && $0.expectation != .trap }
    }

    static let trapCases = FaultMatrix.cases.filter { $0.expectation == .trap }

    @Test(arguments: scenarios)
    func everyFailureIsSeenAsDocumented(_ scenario: FaultCase.Scenario) async {
        let result = await #expect(
            processExitsWith: .success, observing: [\.standardOutputContent, \.standardErrorContent]
        ) { [scenario] in
            let cases = FaultMatrix.cases.filter { $0.scenario == scenario && $0.expectation != .trap }
            let problems = cases.flatMap(FaultScenarios.play)
            for problem in problems { print(problem) }
            print("\(cases.count) cases, \(problems.count) problems")
            fflush(nil)
            // The verdict is the output's last line: the child always exits 0 so its output is kept.
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let errors = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains(", 0 problems"), "\(output)\n\(errors)")
        TestFigures.report("[reliability] faults, \(scenario): \(output.split(separator: "\n").last ?? "no output")")
    }

    @Test(arguments: trapCases)
    func aFailureThatCannotBeReportedTrapsNamingTheCall(_ fault: FaultCase) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [fault] in
            _ = FaultScenarios.play(fault)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        let call = fault.call.split(separator: "(").first.map(String.init) ?? fault.call
        #expect(stderr.contains(call) && stderr.contains("errno \(fault.errno)"), "\(stderr)")
    }

    /// `poll(2)` is made only on the real main thread (the main loop's look at Dispatch's main-queue eventfd): its
    /// cases run in the `main-loop-check` executable.
    @Test func theMainQueuePollRetriesInterruptionsAndTrapsOnFailure() throws {
        _ = try MainLoopCheck.run("poll-interrupted")
        let (status, output) = try TestExecutable.run("main-loop-check", arguments: ["poll-fails"])
        #expect(status != 0 && output.contains("poll failed") && output.contains("errno \(ENOMEM)"), "\(output)")
    }

    @Test func theMatrixCoversEveryWrappedCall() {
        let calls = Set(FaultMatrix.cases.map(\.call))
        for call in [
            "epoll_create1", "epoll_ctl(EPOLL_CTL_ADD)", "epoll_ctl(EPOLL_CTL_MOD)", "epoll_ctl(EPOLL_CTL_DEL)",
            "epoll_wait", "eventfd", "timerfd_create", "timerfd_settime", "read", "write", "pidfd_open", "waitid",
            "pthread_create", "sigaction", "prctl(PR_SET_NAME)", FaultInjection.relayWriteCall, "open",
            "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "sched_get_priority_min",
            "sched_get_priority_max", "pthread_attr_init", "pthread_attr_setstacksize", "pthread_attr_setaffinity_np",
            "pthread_attr_setinheritsched", "pthread_attr_setschedpolicy", "pthread_attr_setschedparam",
            "sched_setscheduler",
        ] {
            #expect(calls.contains(call), "\(call) is never made to fail")
        }
        TestFigures.report(
            "[reliability] fault matrix: \(FaultMatrix.cases.count) cases, \(Self.trapCases.count) traps")
    }
}
