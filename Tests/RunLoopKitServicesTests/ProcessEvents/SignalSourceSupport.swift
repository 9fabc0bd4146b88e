import Foundation
import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Helpers for the signal source tests, which run in exit-test child processes: a signal disposition is
/// process-wide and must never leak into the test runner.
enum SignalSupport {
    /// Unblocks `signals` on the calling thread. Threads started from Swift Testing's (libdispatch) workers
    /// inherit a mask that blocks some signals; a loop thread that should receive them unblocks them.
    static func unblock(_ signals: [CInt]) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Whether `signal` is pending for the calling thread or the process: sent, not delivered yet (a process-directed
    /// signal waits there until a thread that does not block it runs).
    static func isPending(_ signal: CInt) -> Bool {
        var set = sigset_t()
        sigemptyset(&set)
        sigpending(&set)
        return sigismember(&set, signal) == 1
    }

    /// Sends `signal` to this process (any thread that does not block it runs the handler).
    static func sendToSelf(_ signal: CInt) {
        try! ProcessSignal.send(signal, to: getpid())
    }

    /// A loop thread that unblocks `signals`, adds what `setUp` makes and runs until finished.
    static func startLoop(
        unblocking signals: [CInt],
        setUp: @escaping @Sendable (Loop) -> Void = { _ in }
    ) -> ItemsSupport.RunningLoop {
        ItemsSupport.startRunningLoop(timeout: .seconds(60)) { loop in
            unblock(signals)
            setUp(loop)
        }
    }

    /// Monotonic nanoseconds.
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// The current handler function of `signal` as an address (0 for SIG_DFL), and whether it is SA_SIGINFO.
    static func currentHandlerAddress(_ signal: CInt) -> UInt {
        var action = sigaction()
        precondition(sigaction(signal, nil, &action) == 0)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: UInt.self)
    }

    /// Fails the child process with `message` on stdout when `condition` does not hold.
    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        guard !condition else { return }
        fflush(nil)
        let line = "FAILED: \(message())\n"
        _ = line.withCString { write(1, $0, strlen($0)) }  // Unbuffered: the failure always reaches the runner.
        exit(1)
    }

    /// Percentile `fraction` of `samples` (sorted copy).
    static func percentile(_ samples: [Int64], _ fraction: Double) -> Int64 {
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    /// The exit test's output: its figures and its verdict (the figures passed on by ``TestFigures``).
    static func output(_ result: ExitTest.Result?) -> String {
        TestFigures.childOutput(result)
    }
}
