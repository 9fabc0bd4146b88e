import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// Spins for `duration` on the calling thread (a handler that holds the loop up).
private func busyWait(_ duration: Duration) {
    let end = Loop.Instant.now + duration
    while Loop.Instant.now < end {}
}

@Suite struct LoopDelayMonitorTests {
    // MARK: The monitor on a loop

    /// With the default probe, the block finds the probe resting on an idle loop: the wake-up that brings the block
    /// sets it going, and it measures the block all the same.
    @Test(arguments: [false, true])
    func aHandlerThatBlocksShowsUpAsADelayOfAtLeastItsLengthLessTheResolution(wakesIdleLoop: Bool) throws {
        let watched = try LoopThread(name: "delay-block")
        defer { watched.stop() }
        let monitor = try LoopDelayMonitor(
            loop: watched.loop, resolution: .milliseconds(5), wakesIdleLoop: wakesIdleLoop)
        defer { monitor.stop() }
        #expect(monitor.isRunning)
        #expect(monitor.wakesIdleLoop == wakesIdleLoop)
        #expect(waitUntil { monitor.distribution.count >= (wakesIdleLoop ? 3 : 1) })
        // The probe comes due within 5 ms of the block's start and runs when it ends: at least 55 ms late.
        try watched.performAndWait { busyWait(.milliseconds(60)) }
        #expect(waitUntil { monitor.distribution.maximum >= .milliseconds(55) })
        let distribution = monitor.distribution
        #expect(distribution.percentile(100) >= .milliseconds(55))
        #expect(distribution.percentile(100) <= distribution.maximum)
        #expect(distribution.minimum <= distribution.p50)
        #expect(distribution.p50 <= distribution.p90)
        #expect(distribution.p90 <= distribution.p99)
        #expect(distribution.p99 <= distribution.maximum)
        #expect(distribution.mean >= distribution.minimum && distribution.mean <= distribution.maximum)
        #expect(distribution.description.hasPrefix("\(distribution.count) delays: min "))
    }

    /// An idle loop sleeps under the default monitor (the probe rests after one firing) and is woken every
    /// resolution under `wakesIdleLoop` (Node's behaviour). Over 200 ms with a 2 ms probe: about 100 passes against
    /// one or two; the bounds leave room for a slow machine.
    @Test func anIdleLoopIsWokenByTheProbeOnlyWhenAskedTo() throws {
        for wakesIdleLoop in [false, true] {
            let watched = try LoopThread(name: "delay-idle")
            defer { watched.stop() }
            let monitor = try LoopDelayMonitor(
                loop: watched.loop, resolution: .milliseconds(2), wakesIdleLoop: wakesIdleLoop)
            defer { monitor.stop() }
            #expect(waitUntil { monitor.distribution.count >= 1 })
            let before = try watched.performAndWait { watched.loop.metrics.passes }
            let start = Loop.Instant.now
            while Loop.Instant.now - start < .milliseconds(200) { usleep(10_000) }  // The time being measured.
            let passes = try watched.performAndWait { watched.loop.metrics.passes } - before
            TestFigures.report("idle loop, 2 ms probe, wakesIdleLoop \(wakesIdleLoop): \(passes) passes in 200 ms")
            if wakesIdleLoop {
                #expect(passes >= 20, "\(passes) passes in 200 ms")
            } else {
                #expect(passes <= 6, "\(passes) passes in 200 ms")
            }
        }
    }

    @Test func resetForgetsTheDelaysAndTheProbeGoesOn() throws {
        let watched = try LoopThread(name: "delay-reset")
        defer { watched.stop() }
        let monitor = try LoopDelayMonitor(loop: watched.loop, resolution: .milliseconds(2), wakesIdleLoop: true)
        #expect(waitUntil { monitor.distribution.count >= 2 })
        monitor.reset()
        let empty = monitor.distribution
        #expect(empty.count <= 1)  // A firing may land between the reset and the read.
        #expect(waitUntil { monitor.distribution.count >= 3 })
        monitor.stop()
        #expect(!monitor.isRunning)
        #expect(monitor.distribution.count >= 3)  // Stopping keeps what was recorded.
    }

    @Test func anEmptyDistributionIsAllZero() throws {
        let watched = try LoopThread(name: "delay-empty")
        defer { watched.stop() }
        let monitor = try LoopDelayMonitor(loop: watched.loop, resolution: .seconds(60))
        defer { monitor.stop() }
        let distribution = monitor.distribution
        #expect(distribution.count == 0)
        #expect(distribution.minimum == .zero && distribution.maximum == .zero && distribution.mean == .zero)
        #expect(distribution.p50 == .zero && distribution.p99 == .zero)
    }

    @Test func aResolutionBelowOneMillisecondIsRefused() throws {
        let watched = try LoopThread(name: "delay-bad")
        defer { watched.stop() }
        for resolution: Duration in [.zero, .microseconds(999), .seconds(-1)] {
            do throws(LoopError) {
                _ = try LoopDelayMonitor(loop: watched.loop, resolution: resolution)
                Issue.record("resolution \(resolution) accepted")
            } catch {
                #expect(error.code == .invalidInterval, "\(resolution): \(error)")
            }
        }
    }

    // MARK: The buckets

    @Test func everyValueLandsInABucketThatHoldsItWithinOneThirtySecond() {
        var previous = -1
        var value: Int64 = 0
        while value < Int64(1) << 42 {
            let bucket = DelayHistogram.bucket(of: value)
            #expect(bucket >= previous)
            let highest = DelayHistogram.highestValue(inBucket: bucket)
            #expect(highest >= value, "\(value) in bucket \(bucket) up to \(highest)")
            #expect(highest - value <= value / 32, "\(value): bucket up to \(highest)")
            #expect(bucket == 0 || DelayHistogram.highestValue(inBucket: bucket - 1) < value)
            previous = bucket
            value = value < 100 ? value + 1 : value + value / 7 + 1
        }
        #expect(DelayHistogram.bucket(of: .max) == DelayHistogram.bucketCount - 1)
    }

    @Test func percentilesOfKnownValuesAreWithinABucketAndMinMaxMeanAreExact() {
        var histogram = DelayHistogram()
        for microseconds in 1...1_000 { histogram.record(Int64(microseconds) * 1_000) }
        histogram.record(-5)  // Counts as 0.
        let distribution = LoopDelayMonitor.Distribution(histogram)
        #expect(distribution.count == 1_001)
        #expect(distribution.minimum == .zero)
        #expect(distribution.maximum == .milliseconds(1))
        #expect(distribution.mean == .nanoseconds(500_500_000 / 1_001))
        for (percent, expected) in [(50.0, 500_000), (90.0, 900_000), (99.0, 990_000)] {
            let reported = distribution.percentile(percent) / .nanoseconds(1)
            #expect(reported >= Double(expected) && reported <= Double(expected) * (1 + 1.0 / 32), "p\(percent)")
        }
        #expect(distribution.percentile(100) == .milliseconds(1))
        #expect(distribution.percentile(250) == .milliseconds(1))
        #expect(distribution.percentile(0) == .zero)
        histogram.reset()
        #expect(histogram.count == 0 && histogram.maximum == 0 && histogram.counts.allSatisfy { $0 == 0 })
    }
}
