import Foundation
import Testing

/// Every ```` ```swift ```` block of README.md, Docs/*.md and the DocC catalog (articles and Extensions/ pages) is a
/// complete program: pasted alone into an executable's `main.swift` (with `import RunLoopKit` added when the block
/// lacks it), it compiles in Swift 6 language mode and, run on the process's real main thread, exits with status 0
/// on its own, printing what the page promises (`// prints "…"`) and nothing it rules out (`// never prints "…"`).
///
/// Each block is compiled with `swiftc -swift-version 6` against the objects this build already made (no package
/// of its own to resolve), at most two at a time, and run as a child process with a deadline.
///
/// Under `swift test --sanitize=thread` / `--sanitize=address` the package's objects carry the sanitizer, so the
/// examples are compiled with the same `-sanitize=` (they could not link otherwise) and run under it: they then
/// check the examples' cross-thread and main-queue paths as the sanitizer sees them, in real main-thread processes
/// the rest of the suite has few of, for a few seconds more per run. A sanitizer report in an example's output
/// fails it, as it fails CI's log check.
@Suite struct DocumentationExamplesTests {
    /// Two compilations at a time: the machine has two cores, shared with the rest of the suite.
    static let slots = ExampleSlots(2)

    /// How long a compiled example may run: they finish in a few seconds.
    static let runDeadline = Duration.seconds(30)

    @Test(arguments: try DocumentationExamples.all())
    func exampleWorksPastedIntoMainSwift(_ example: DocumentationExample) async throws {
        let builder = try ExampleBuilder.forThisBuild()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("RunLoopKit-examples-\(getpid())")
            .appendingPathComponent(example.page.replacingOccurrences(of: "/", with: "_") + "-\(example.index)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

        await Self.slots.acquire()
        let executable: URL
        do {
            executable = try await builder.compile(example, in: folder)
            await Self.slots.release()
        } catch {
            await Self.slots.release()
            Issue.record("\(example.testDescription) does not compile as main.swift: \(error)")
            return
        }

        var environment = ProcessInfo.processInfo.environment
        if builder.sanitizer == "address" {
            // Objects still alive when a program exits are not the leaks this test looks for.
            environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "detect_leaks=0"
        }
        let outcome: ExampleBuilder.Outcome
        do {
            outcome = try await ExampleBuilder.run(
                executable, in: folder, deadline: Self.runDeadline, environment: environment)
        } catch {
            Issue.record("\(example.testDescription) does not finish on its own: \(error)")
            return
        }

        let report = """
            \(example.testDescription), built in \(folder.path):
            --- standard output ---
            \(outcome.standardOutput)--- standard error ---
            \(outcome.standardError)
            """
        #expect(outcome.status == 0, "exit status \(outcome.status): \(report)")
        for promised in example.promisedOutput {
            #expect(outcome.standardOutput.contains(promised), "the page promises it prints \"\(promised)\": \(report)")
        }
        for forbidden in example.forbiddenOutput {
            #expect(
                !outcome.standardOutput.contains(forbidden),
                "the page promises it never prints \"\(forbidden)\": \(report)")
        }
        for sanitizerReport in ["WARNING: ThreadSanitizer", "ERROR: AddressSanitizer"] {
            #expect(!outcome.standardError.contains(sanitizerReport), "sanitizer report: \(report)")
        }
        if outcome.status == 0 {
            try? FileManager.default.removeItem(at: folder)
            rmdir(folder.deletingLastPathComponent().path)  // The run's folder, once its last example is gone.
        }
    }

    /// The extraction finds the blocks (so the test above cannot pass by finding none), and the pages of `Loop`,
    /// `LoopThread` and every item type show an example.
    @Test func thePagesHaveExamples() throws {
        let examples = try DocumentationExamples.all()
        #expect(examples.contains { $0.page == "README.md" })
        #expect(examples.contains { $0.page.hasPrefix("Docs/") })
        let typePages = [
            ("RunLoopKit", "Loop"), ("RunLoopKit", "LoopThread"), ("RunLoopKit", "LoopSource"),
            ("RunLoopKit", "FileDescriptorSource"), ("RunLoopKit", "LoopTimer"), ("RunLoopKit", "LoopObserver"),
            ("RunLoopKitServices", "SignalSource"), ("RunLoopKitServices", "ChildExitSource"),
        ]
        for (module, type) in typePages {
            let page = "Sources/\(module)/\(module).docc/Extensions/\(type).md"
            #expect(examples.contains { $0.page == page }, "\(page) shows no ```swift example")
        }
    }

    /// Fences the extraction must read: indented ones (in list items), several per page, other languages skipped.
    @Test func blocksAreFoundWhereverTheyAre() {
        let page = """
            Text.

            ```swift
            print("one")   // prints "one"
            ```

            - An item:

              ```swift
              import Glibc
              print("two")
              ```

            ```sh
            swift test
            ```
            """
        let blocks = DocumentationExamples.blocks(in: page, page: "page.md")
        #expect(blocks.count == 2)
        #expect(blocks.first?.code == "print(\"one\")   // prints \"one\"\n")
        #expect(blocks.first?.line == 4)
        #expect(blocks.first?.promisedOutput == ["one"])
        #expect(blocks.last?.code == "import Glibc\nprint(\"two\")\n")
        #expect(blocks.last?.program == "import RunLoopKit\nimport Glibc\nprint(\"two\")\n")
        #expect(blocks.last?.index == 2)
    }
}
