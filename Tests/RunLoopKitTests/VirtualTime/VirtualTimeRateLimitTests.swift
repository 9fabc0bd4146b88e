import RunLoopKit
import TestSupport
import Testing

/// A rate limit on a loop on virtual time counts its windows on the loop's clock: it admits and pauses at the same
/// virtual instants on every run, and a pause ends when the virtual clock reaches the window's end.
@Suite struct VirtualTimeRateLimitTests {
    @Test func aRateLimitedTimerFiresAtTheRightVirtualInstants() throws {
        let fired = Recorder<Double>()
        let changes = Recorder<String>()
        try Loop.withVirtualTime { loop in
            let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _ in
                fired.append(Double(loop.now.nanoseconds) / 1e9)
            }
            timer.rateLimit = try RateLimit(burst: 3, per: .seconds(10))
            timer.rateLimitHandler = { _, isLimited in
                changes.append("\(isLimited ? "paused" : "resumed")@\(Double(loop.now.nanoseconds) / 1e9)")
            }
            try loop.add(timer)
            try loop.advance(by: .seconds(25))
            timer.invalidate()
        }
        // A window opens at 1 s with 3 firings; the 4th (4 s) is held back until the window ends at 11 s, where the
        // firings due meanwhile become one, and a new window opens.
        #expect(fired.all == [1, 2, 3, 11, 12, 13, 21, 22, 23])
        #expect(changes.all == ["paused@4.0", "resumed@11.0", "paused@14.0", "resumed@21.0", "paused@24.0"])
    }

    @Test func aRateLimitedSourceIsPerformedAgainWhenTheVirtualWindowEnds() throws {
        let performed = Recorder<Double>()
        try Loop.withVirtualTime { loop in
            let source = LoopSource { source in
                performed.append(Double(loop.now.nanoseconds) / 1e9)
                source.signal()  // A producer that never lets up.
            }
            source.rateLimit = try RateLimit(burst: 2, per: .seconds(60))
            try loop.add(source)
            source.signal()
            try loop.advance(by: .seconds(150))
            #expect(source.isRateLimited)
            source.invalidate()
        }
        #expect(performed.all == [0, 0, 60, 60, 120, 120])
    }
}
