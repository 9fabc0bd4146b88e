import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// `itemCounts(in:)` and `itemCountsByMode`: how many items of each kind a mode holds, from any thread.
@Suite struct ItemCountsTests {
    typealias Counts = Loop.ItemCounts

    @Test func onTheLoopsThreadCountsFollowAddsRemovesAndInvalidationsAtOnce() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let log = Recorder<Counts>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in }
            let descriptor = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            let timer = try! LoopTimer(after: .zero) { _ in }
            let farTimer = ItemsSupport.keepAlive()
            let observer = LoopObserver(activities: .entry) { _, _ in }
            log.append(loop.itemCounts())
            try! loop.add(source)
            try! loop.add(descriptor)
            try! loop.add(timer)
            try! loop.add(farTimer)
            try! loop.add(observer)
            log.append(loop.itemCounts())
            loop.remove(source)
            observer.invalidate()
            log.append(loop.itemCounts())
            loop.run(in: .default, for: .milliseconds(50))  // The one-shot fires and leaves the mode.
            log.append(loop.itemCounts())
            timer.setNextFireTime(.now + .seconds(3600))  // Re-armed: counted again.
            log.append(loop.itemCounts())
            for item in [descriptor.invalidate, timer.invalidate, farTimer.invalidate] { item() }
            log.append(loop.itemCounts())
        }
        #expect(
            log.all == [
                Counts(),
                Counts(sources: 1, descriptorSources: 1, timers: 2, observers: 1),
                Counts(descriptorSources: 1, timers: 2),
                Counts(descriptorSources: 1, timers: 1),
                Counts(descriptorSources: 1, timers: 2),
                Counts(),
            ])
    }

    @Test func fromAnotherThreadChangesShowOnceTheLoopAppliedThem() {
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        let loop = running.loop
        // The running loop's own items: a far timer and the stopper source.
        let base = Counts(sources: 1, timers: 1)
        #expect(waitUntil { loop.itemCounts() == base })
        let other = Loop.Mode("other")
        let sources = (0..<3).map { _ in LoopSource { _ in } }
        let observer = LoopObserver(activities: .beforeWaiting) { _, _ in }
        for source in sources { try! loop.add(source) }
        try! loop.add(observer, to: other)
        #expect(waitUntil { loop.itemCounts() == Counts(sources: 4, timers: 1) })
        #expect(waitUntil { loop.itemCounts(in: other) == Counts(observers: 1) })
        loop.remove(sources[0])
        sources[1].invalidate()
        observer.invalidate()
        #expect(waitUntil { loop.itemCounts() == Counts(sources: 2, timers: 1) })
        #expect(waitUntil { loop.itemCounts(in: other) == Counts() })
        #expect(loop.itemCountsByMode == [.default: Counts(sources: 2, timers: 1), other: Counts()])
        sources[2].invalidate()
    }

    @Test func anItemAddedToTheCommonModesCountsInEachAndInCommon() {
        let log = Recorder<String>()
        let tracking = Loop.Mode("tracking")
        let privateMode = Loop.Mode("private")
        ItemsSupport.onLoopThread { loop in
            loop.addCommonMode(tracking)
            let timer = ItemsSupport.keepAlive()
            let observer = LoopObserver(activities: .entry) { _, _ in }
            try! loop.add(timer, to: .common)
            try! loop.add(observer, to: privateMode)
            for mode in [Loop.Mode.common, .default, tracking, privateMode] {
                log.append("\(mode): \(loop.itemCounts(in: mode))")
            }
            let later = Loop.Mode("later")
            loop.addCommonMode(later)  // The common items join it.
            log.append("later: \(loop.itemCounts(in: later))")
            log.append("modes: \(loop.itemCountsByMode.keys.map(\.name).sorted())")
            loop.remove(timer, from: .common)
            log.append("removed: \(loop.itemCounts(in: .common).total) \(loop.itemCounts(in: later).total)")
            log.append("never made: \(loop.itemCounts(in: Loop.Mode("never made")))")
            observer.invalidate()
        }
        #expect(
            log.all == [
                "common: 0 sources, 0 descriptor sources, 1 timer, 0 observers",
                "default: 0 sources, 0 descriptor sources, 1 timer, 0 observers",
                "tracking: 0 sources, 0 descriptor sources, 1 timer, 0 observers",
                "private: 0 sources, 0 descriptor sources, 0 timers, 1 observer",
                "later: 0 sources, 0 descriptor sources, 1 timer, 0 observers",
                "modes: [\"default\", \"later\", \"private\", \"tracking\"]",
                "removed: 0 0",
                "never made: 0 sources, 0 descriptor sources, 0 timers, 0 observers",
            ])
    }

    @Test func aLoopWhoseThreadExitedCountsNothing() {
        let source = LoopSource { _ in }
        let timer = ItemsSupport.keepAlive()
        let seen = Recorder<Int>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(source, to: .common)
            try! loop.add(timer, to: Loop.Mode("elsewhere"))
            seen.append(
                loop.itemCounts(in: .common).total + loop.itemCounts().total + loop.itemCounts(in: "elsewhere").total)
        }
        thread.join()
        #expect(seen.all == [3])
        #expect(loop.isTerminated)
        #expect(loop.itemCounts() == Counts())
        #expect(loop.itemCounts(in: .common) == Counts())
        #expect(loop.itemCountsByMode.isEmpty)
        source.invalidate()
        timer.invalidate()
    }
}
