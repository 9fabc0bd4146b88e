import Glibc
import RunLoopKit
import RunLoopKitServices
import TestSupport
import Testing

/// The rate limits' issue test, which needs a service: a descriptor that is always readable, rate-limited, no longer
/// starves a timer or a child-exit source of the same loop (the rest of the rate limits' tests are the core's,
/// `RateLimitTests`).
@Suite struct RateLimitStarvationTests {
    @Test func aFloodingDescriptorNoLongerStarvesATimerOrAChildExit() {
        let floodCalls = Counter()
        let ticks = Counter()
        let passes = Counter()
        let exit = Box<ChildExitStatus>()
        let sawLimited = ItemsSupport.Flag()
        let elapsed = Box<Duration>()
        let pipe = Pipe()
        pipe.write()  // Never drained: readable on every pass.
        let child = ChildProcess.spawn(["/bin/sleep", "0.3"])
        ItemsSupport.onLoopThread { loop in
            let flood = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in floodCalls.increment() }
            flood.rateLimit = try! RateLimit(burst: 10, per: .milliseconds(100))
            flood.rateLimitHandler = { _, limited in if limited { sawLimited.set() } }
            try! loop.add(flood)
            try! loop.add(
                try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in ticks.increment() })
            try! loop.add(try! ChildExitSource(pid: child) { _, status in exit.value = status })
            try! loop.add(LoopObserver(activities: [.afterWaiting]) { _, _ in passes.increment() })
            let start = Loop.Instant.now
            ItemsSupport.run(loop, timeout: .seconds(20)) {
                exit.value != nil && Loop.Instant.now - start >= .seconds(1)
            }
            elapsed.value = Loop.Instant.now - start
            flood.invalidate()
        }
        pipe.close()
        let seconds =
            Double((elapsed.value ?? .zero).components.seconds)
            + Double((elapsed.value ?? .zero).components.attoseconds) / 1e18
        #expect(exit.value == .exited(code: 0))
        #expect(sawLimited.isSet)
        // At most 10 calls per window of 100 ms, and a window opens at the first call after the last one ended.
        #expect(floodCalls.current >= 10)
        #expect(Double(floodCalls.current) <= 10 * (seconds / 0.1 + 1))
        // A 10 ms timer over a second or more: at least a fifth of its ticks even on a loaded machine (alone, it
        // ticks 100 times a second here, flood or not).
        #expect(Double(ticks.current) >= seconds * 100 / 5)
        // The loop sleeps between windows instead of spinning: a pass per tick, per window and per wake-up, not
        // the hundreds of thousands an always-ready descriptor would cause.
        #expect(Double(passes.current) <= seconds * 1_000)
    }
}
