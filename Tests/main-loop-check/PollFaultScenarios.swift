import Glibc
import RunLoopKit
import RunLoopKitSystem

// The main loop's look at Dispatch's main-queue eventfd (`poll(2)`, made only on the main thread, when a run that
// the main queue does not keep alive finds its mode otherwise empty) made to fail through the syscall layer's
// fault-injection seam, which exists in debug builds only (the tests' builds).

/// A thousand `EINTR`s in a row are retried: the run still finishes at once.
func pollInterruptedScenario() {
    #if RUNLOOPKIT_FAULT_INJECTION
    Loop.main.mainQueueKeepsRunAlive = false
    FaultInjection.install([.init("poll", EINTR, times: 1_000)])
    let result = Loop.main.run(in: .default, for: .seconds(10))
    let failed = FaultInjection.remove()
    check(failed == [1_000], "poll failed \(failed) times")
    check(result == .finished, "the run answered \(result)")
    pass("poll_eintr=1000")
    #else
    fail("built without fault injection (a release build)")
    #endif
}

/// `EFAULT`, `EINVAL`, `ENOMEM`: the loop cannot tell whether main-queue work is queued, so it traps naming the call.
func pollFailsScenario() {
    #if RUNLOOPKIT_FAULT_INJECTION
    Loop.main.mainQueueKeepsRunAlive = false
    FaultInjection.install([.init("poll", ENOMEM)])
    let result = Loop.main.run(in: .default, for: .seconds(10))
    fail("the run answered \(result) instead of trapping")
    #else
    fail("built without fault injection (a release build)")
    #endif
}
