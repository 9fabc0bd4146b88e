import Glibc
import RunLoopKit
import TestSupport
import Testing

/// `allModes`, `commonModes` and `contains(_:in:)` answer from any thread (CF answers them under its loop lock),
/// and a block that names a mode makes it exist, as the docs say and as CF does.
@Suite struct ModeQueriesTests {
    @Test func modeQueriesAnswerFromAnotherThread() throws {
        let source = LoopSource { _ in }
        let timer = try LoopTimer(after: .seconds(3600)) { _ in }
        let running = ItemsSupport.startRunningLoop { loop in
            try! loop.add(source, to: "tracking")
            try! loop.add(timer, to: .common)
            loop.addCommonMode("modal")
        }
        defer { running.finish() }
        let loop = running.loop
        #expect(loop.commonModes == [.default, "modal"])
        #expect(Set(loop.allModes).isSuperset(of: [.default, "tracking", "modal"]))
        #expect(loop.contains(source, in: "tracking"))
        #expect(!loop.contains(source, in: .default))
        #expect(loop.contains(timer, in: .common))
        #expect(loop.contains(timer, in: "modal"))
        #expect(!loop.contains(LoopSource { _ in }, in: "tracking"))
        // A change from another thread shows once the loop applied it.
        loop.remove(source, from: "tracking")
        #expect(waitUntil { !loop.contains(source, in: "tracking") })
        source.invalidate()
        timer.invalidate()
    }

    @Test func aBlockThatNamesAModeMakesItExist() {
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        running.loop.perform(in: "Custom") {}
        running.loop.perform(in: ["Other", .common]) {}
        #expect(running.loop.allModes.contains("Custom"))
        #expect(running.loop.allModes.contains("Other"))
        #expect(!running.loop.allModes.contains(.common))
    }
}
