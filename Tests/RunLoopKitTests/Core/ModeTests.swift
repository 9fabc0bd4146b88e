import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Modes and the common pseudo-mode: which items a run in a mode sees.
@Suite struct ModeTests {
    // MARK: Separate modes

    @Test func itemsOfOneModeDoNotRunInAnother() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let events = Recorder<String>()
        let descriptorSource = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            pipe.drain()
            events.append("descriptor")
        }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let source = LoopSource { _ in events.append("source") }
            try! loop.add(source, to: "other")
            try! loop.add(try! LoopTimer(at: .now) { _ in events.append("timer") }, to: "other")
            try! loop.add(LoopObserver(activities: .entry) { _, _ in events.append("observer") }, to: "other")
            try! loop.add(descriptorSource, to: "other")
            source.signal()
            pipe.write()
            loop.perform(in: "other") { events.append("block") }
            events.append("default: \(loop.run(in: .default, for: .milliseconds(100)))")
            events.append("other: \(loop.run(in: "other", for: .zero))")
            descriptorSource.invalidate()
        }
        #expect(
            events.all == [
                "default: timedOut", "observer", "block", "source", "timer", "descriptor", "other: timedOut",
            ])
    }

    @Test func anItemInSeveralModesRunsInEachOfThem() {
        let fired = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in fired.append(loop.currentMode?.name ?? "nil") }
            try! loop.add(source)
            try! loop.add(source, to: "a")
            try! loop.add(source, to: "b")
            for mode: Loop.Mode in [.default, "a", "b"] {
                source.signal()
                loop.run(in: mode, for: .zero)
            }
            loop.remove(source, from: "a")
            source.signal()
            fired.append("a: \(loop.run(in: "a", for: .zero))")
            loop.run(in: "b", for: .zero)
            source.invalidate()
        }
        #expect(fired.all == ["default", "a", "b", "a: finished", "b"])
    }

    // MARK: Common modes

    @Test func aCommonItemRunsInDefaultAndInAModeMadeCommonLater() {
        let fired = Recorder<String>()
        let answers = Recorder<Bool>()
        let commonModes = Box<Set<Loop.Mode>>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in fired.append(loop.currentMode?.name ?? "nil") }
            try! loop.add(source, to: .common)
            source.signal()
            loop.run(in: .default, for: .zero)
            source.signal()
            fired.append("tracking before: \(loop.run(in: "tracking", for: .zero))")
            loop.addCommonMode("tracking")
            answers.append(loop.contains(source, in: "tracking"))
            loop.run(in: "tracking", for: .zero)  // Still signalled from before.
            commonModes.value = loop.commonModes
            answers.append(loop.contains(source, in: .common))
            answers.append(loop.contains(source, in: .default))
            answers.append(loop.contains(source, in: "elsewhere"))
            source.invalidate()
        }
        #expect(fired.all == ["default", "tracking before: finished", "tracking"])
        #expect(answers.all == [true, true, true, false])
        #expect(commonModes.value == [.default, "tracking"])
    }

    @Test func addCommonModeFromAnotherThreadPropagatesCommonItems() {
        let fired = Recorder<String>()
        let modeAdded = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            let timer = try! LoopTimer(at: .now, repeating: .milliseconds(5)) { _ in
                fired.append(loop.currentMode?.name ?? "nil")
            }
            try! loop.add(timer, to: .common)
            _ = waitUntil { modeAdded.isSet }
            fired.append("tracking: \(loop.run(in: "tracking", for: .milliseconds(100)))")
            timer.invalidate()
        }
        loop.addCommonMode("tracking")
        modeAdded.set()
        thread.join()
        let events = fired.all
        #expect(events.last == "tracking: timedOut")
        #expect(events.dropLast().count >= 2)
        #expect(events.dropLast().allSatisfy { $0 == "tracking" })
    }

    @Test func removingFromCommonRemovesFromEveryCommonMode() {
        let answers = Recorder<String>()
        let performed = Counter()
        ItemsSupport.onLoopThread { loop in
            loop.addCommonMode("tracking")
            let source = LoopSource { _ in performed.increment() }
            let observer = LoopObserver(activities: .all) { _, _ in }
            try! loop.add(source, to: .common)
            try! loop.add(observer, to: .common)
            try! loop.add(source, to: "private")
            loop.remove(source, from: .common)
            loop.remove(observer, from: .common)
            for mode: Loop.Mode in [.common, .default, "tracking", "private"] {
                answers.append("\(mode): \(loop.contains(source, in: mode)) \(loop.contains(observer, in: mode))")
            }
            source.signal()
            answers.append("default \(loop.run(in: .default, for: .zero))")
            answers.append("tracking \(loop.run(in: "tracking", for: .zero))")
            source.invalidate()
        }
        #expect(
            answers.all == [
                "common: false false", "default: false false", "tracking: false false", "private: true false",
                "default finished", "tracking finished",
            ])
        #expect(performed.current == 0)
    }

    @Test func aBlockForTheCommonModesRunsInAnyCommonModeButNotInOthers() {
        let ran = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive(), to: "private")
            loop.perform(in: .common) { ran.append(loop.currentMode?.name ?? "nil") }
            ran.append("private \(loop.run(in: "private", for: .zero))")
            loop.addCommonMode("tracking")
            try! loop.add(ItemsSupport.keepAlive(), to: "tracking")
            loop.run(in: "tracking", for: .zero)
        }
        #expect(ran.all == ["private timedOut", "tracking"])
    }
}
