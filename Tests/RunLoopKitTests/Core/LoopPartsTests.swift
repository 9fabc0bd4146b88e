import Testing

@testable import RunLoopKit

/// `Loop` stays a handful of named parts (Docs/Internals.md, "Modules and layers"): each new concern goes into the part it belongs
/// to, not into another stored property of the loop.
@Suite struct LoopPartsTests {
    @Test func aLoopIsAtMostFifteenNamedParts() {
        let parts = Mirror(reflecting: Loop.current).children.compactMap(\.label)
        #expect(parts.count <= 15, "Loop's stored properties: \(parts)")
        #expect(
            Set(parts) == [
                "identity", "poller", "inbox", "signalStack", "control", "publishedModes", "metricsKeeper",
                "modeTable", "defaultMode", "runStack", "timerTable", "descriptorTable", "blocks", "mainQueue",
                "scratch",
            ])
    }
}
