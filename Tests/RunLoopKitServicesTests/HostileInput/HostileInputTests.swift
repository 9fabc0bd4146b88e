import Foundation
import Glibc
import RunLoopKit
import RunLoopKitSystem
import Testing

@testable import RunLoopKitServices

/// The fuzzer's corpus (scripts/check/fuzz/corpus/<target>/, grown by `scripts/check/fuzz.sh --merge`) replayed through
/// the same targets (``HostileInput``) without libFuzzer, and each crash the fuzzer found, kept as a test of its own.
@Suite struct HostileInputTests {
    /// Where the corpus is kept, from this file's place in the repository.
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/check/fuzz/corpus")

    static let targets = HostileInput.targets.keys.sorted()

    @Test(arguments: targets)
    func theKeptCorpusMeetsEveryPromise(_ target: String) throws {
        let directory = Self.corpus.appendingPathComponent(target)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(!files.isEmpty, "no corpus for \(target) at \(directory.path)")
        let run = try #require(HostileInput.targets[target])
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(file)))
            let problems = run(bytes, false)  // The suite runs in parallel: other tests open descriptors.
            #expect(problems.isEmpty, "\(target)/\(file): \(problems)")
        }
    }

    @Test func theCorpusHasADirectoryPerTargetAndNoOther() throws {
        let directories = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        #expect(directories == Self.targets)
    }
}
