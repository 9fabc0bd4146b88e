import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// A signal that interrupts `epoll_wait` (a handler installed without `SA_RESTART`) neither ends a run early nor
/// delays its timers: the wait is resumed.
@Suite struct SignalInterruptTests {
    static let handled = Atomic<Int>(0)

    /// Run in a child process: the handler is process-wide, and timing is fairer without parallel tests.
    @Test func interruptedWaitsResumeAndTimersFireOnTime() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in
                SignalInterruptTests.handled.add(1, ordering: .relaxed)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0  // No SA_RESTART: epoll_wait returns EINTR.
            precondition(sigaction(SIGUSR1, &action, nil) == 0)

            let threadBox = Box<pthread_t>()
            let timerAfter = Box<Duration>()
            let outcome = Box<(Loop.RunResult, Duration)>()
            let (loop, thread) = startLoopThread { loop in
                // Threads made from Swift Testing's (libdispatch) workers inherit a mask blocking SIGUSR1.
                var unblock = sigset_t()
                sigemptyset(&unblock)
                sigaddset(&unblock, SIGUSR1)
                pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
                threadBox.value = pthread_self()
                let start = Loop.Instant.now
                try! loop.add(try! LoopTimer(after: .milliseconds(200)) { _ in timerAfter.value = .now - start })
                try! loop.add(ItemsSupport.keepAlive())
                let result = loop.run(in: .default, for: .milliseconds(300))
                outcome.value = (result, .now - start)
            }
            _ = waitUntil { loop.isWaiting }
            var sent = 0
            while outcome.value == nil && sent < 6 {
                pthread_kill(threadBox.value!, SIGUSR1)
                sent += 1
                usleep(40_000)  // Spreads the signals over the run; not a wait for a condition.
            }
            thread.join()
            let (result, elapsed) = outcome.value!
            let fired = timerAfter.value
            let handled = SignalInterruptTests.handled.load(ordering: .relaxed)
            print(
                "[reliability] EINTR: \(handled) signals handled, timer at \(fired.map { "\($0)" } ?? "never"), "
                    + "run \(result) after \(elapsed)")
            let timerOnTime = fired.map { $0 >= .milliseconds(200) && $0 < .milliseconds(200) + CoreRunSupport.slack }
            let ok =
                handled >= 3 && timerOnTime == true && result == .timedOut
                && elapsed >= .milliseconds(300) && elapsed < .milliseconds(300) + CoreRunSupport.slack
            print(ok ? "verdict: ok" : "verdict: FAILED")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }
}
