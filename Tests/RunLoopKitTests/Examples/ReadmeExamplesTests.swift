import Foundation
import RunLoopKit
import Testing

/// The README's examples: each block of README.md marked `<!-- example -->` appears in ReadmeExamples.swift line
/// for line (so it compiles), and those that can run here run with the outcome the page promises.
@Suite struct ReadmeExamplesTests {
    /// The package's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift blocks that follow an `<!-- example -->` marker, each as its lines.
    static func readmeExamples() throws -> [[String]] {
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [[String]] = []
        var current: [String]?
        var marked = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line == "<!-- example -->" {
                marked = true
            } else if marked && line == "```swift" {
                current = []
                marked = false
            } else if line == "```", let block = current {
                blocks.append(block)
                current = nil
            } else if current != nil {
                current!.append(line)
            }
        }
        return blocks
    }

    @Test func everyReadmeExampleIsCompiledVerbatim() throws {
        let source = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/RunLoopKitTests/Examples/ReadmeExamples.swift"),
            encoding: .utf8)
        let compiled = source.split(separator: "\n").map { Self.normalized($0) }
        let examples = try Self.readmeExamples()
        #expect(examples.count >= 9)
        for example in examples {
            let lines = example.map { Self.normalized($0) }.filter { !$0.isEmpty }
            let found = compiled.indices.contains { start in
                start + lines.count <= compiled.count && Array(compiled[start..<start + lines.count]) == lines
            }
            #expect(found, "README example not in ReadmeExamples.swift:\n\(example.joined(separator: "\n"))")
        }
    }

    /// `line` without leading and trailing spaces, every run of spaces inside made one (the formatter's alignment of
    /// trailing comments differs between the page and the file).
    static func normalized(_ line: Substring) -> String {
        line.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    static func normalized(_ line: String) -> String { normalized(line[...]) }

    @Test func signallingAnotherThreadsLoopPerformsOnTheWorker() {
        // Three signals 100 ms apart: three performs, unless the worker had not added the source before the first
        // signal (the first signals then coalesce into one perform when it is added).
        #expect((1...3).contains(ReadmeExamples.signalAnotherThreadsLoop()))
    }

    @Test func theWorkerComputesOnItsThread() async throws {
        let (sum, count) = try await ReadmeExamples.keepAliveWorker()
        #expect(sum == 55)
        #expect(count == 42)
    }

    @Test func theTimerTicks() throws {
        let ticks = try TestThread.value { try ReadmeExamples.timer() }
        #expect((3...12).contains(ticks))
    }

    @Test func theCancelledTimeoutNeverRunsAndTheRunEnds() throws {
        let timedOut = try TestThread.value { try ReadmeExamples.oneShotTimeout() }
        #expect(!timedOut)
    }

    @Test func theDescriptorSourceReadsThePipe() throws {
        try TestThread.value { try ReadmeExamples.descriptorSource() }
    }

    @Test func theObserverAndThePhaseTasksRunOnTheirLoop() throws {
        try TestThread.value {
            let observer = try ReadmeExamples.observer()
            let phases = try ReadmeExamples.phaseTasks()
            try Loop.current.add(LoopTimer(after: .milliseconds(10)) { _ in })
            Loop.current.run(in: .default, for: .seconds(1))
            observer.invalidate()
            phases.invalidate()
        }
    }

    @Test func theStallMonitorStartsAndStops() throws {
        try ReadmeExamples.stallMonitor()
    }

    @Test func theActorRunsOnItsThread() async throws {
        let database = try Database()
        #expect(await database.query() == 42)
        database.thread.stop()
    }
}

extension TestThread {
    /// Runs `body` on a new thread (with a loop of its own) and answers its value, rethrowing its error.
    static func value<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let result = Box<Result<T, any Error>>()
        let thread = TestThread { result.value = Result { try body() } }
        thread.join()
        return try result.value!.get()
    }
}
