import Foundation
import Glibc
import Synchronization
import Testing

/// Every ```` ```swift ```` block of README.md, Docs/*.md and the DocC catalog (articles and Extensions/ pages) is a
/// complete program: pasted alone into an executable's `main.swift` (with `import RunLoopKit` added when the block
/// lacks it), it compiles in Swift 6 language mode and, run on the process's real main thread, exits with status 0
/// on its own, printing what the page promises (`// prints "…"`) and nothing it rules out (`// never prints "…"`).
///
/// A ```` ```swift service ```` block (Docs/Tutorial.md's) is a program that serves until it is told to stop, as a
/// service does: it listens on the Unix socket `hello.sock` in its working directory, answers a request with its
/// text in upper case, and prints its first promised line (`// prints "…"`) once it serves. Run in its folder, it is
/// sent one request, whose answer is checked, then SIGTERM: it must then exit 0, or be ended by that signal when it
/// does not handle it (status 143); what it promises to print is checked after that.
///
/// A ```` ```swift file=Tests/RunLoopKitTests/DocExamples/… ```` block (a Swift Testing example, which no `main.swift`
/// can run) is not compiled here: it quotes a test file that `swift test` runs, and must equal that file byte for
/// byte (``quotedTestFileMatchesThePage(_:)``).
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
        let answer = Mutex<String?>(nil)
        do {
            if example.isService {
                // Through a shell that changes to the folder and replaces itself with the service: same process id.
                outcome = try await ExampleBuilder.run(
                    URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "cd \"$0\" && exec ./example", folder.path],
                    in: folder, deadline: Self.runDeadline, environment: environment
                ) { pid, outputPath in
                    let reply = await Self.exerciseService(
                        pid, servingOnceItPrints: example.promisedOutput.first ?? "", outputPath: outputPath,
                        socketPath: folder.appendingPathComponent("hello.sock").path)
                    answer.withLock { $0 = reply }
                }
            } else {
                outcome = try await ExampleBuilder.run(
                    executable, in: folder, deadline: Self.runDeadline, environment: environment)
            }
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
        if example.isService {
            let reply = answer.withLock { $0 }
            #expect(reply == "HELLO\n", "the service answered \(reply.map { "\"\($0)\"" } ?? "nothing"): \(report)")
            #expect(
                outcome.status == 0 || outcome.status == 128 + SIGTERM,
                "exit status \(outcome.status) after SIGTERM: \(report)")
        } else {
            #expect(outcome.status == 0, "exit status \(outcome.status): \(report)")
        }
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

    /// Waits (up to 20 s) until the service `pid` has printed `line` to `outputPath`, sends `hello\n` to its socket
    /// at `socketPath`, reads its answer, then sends it SIGTERM. Answers the answer, or `nil` when it never served.
    static func exerciseService(
        _ pid: pid_t, servingOnceItPrints line: String, outputPath: String, socketPath: String
    ) async -> String? {
        defer { kill(pid, SIGTERM) }
        let end = ContinuousClock.now + .seconds(20)
        while ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").contains(line) == false {
            guard ContinuousClock.now < end else { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let client = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard client >= 0 else { return nil }
        defer { close(client) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: socketPath.utf8.prefix($0.count - 1)) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)  // An answer that never comes fails the test, not hangs it.
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0, write(client, "hello\n", 6) == 6 else { return nil }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {  // Until the service closes the connection.
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { break }
            answer += buffer[..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// A block that quotes a test file is that file, byte for byte: the test that `swift test` runs is what the page
    /// shows, so the page's example is compiled and run as a test.
    @Test(arguments: try DocumentationExamples.quotations())
    func quotedTestFileMatchesThePage(_ example: DocumentationExample) throws {
        let file = try #require(example.quotedFile)
        let url = DocumentationExamples.packageRoot.appendingPathComponent(file)
        guard let contents = try? String(contentsOf: url, encoding: .utf8) else {
            Issue.record("\(example.testDescription) quotes \(file), which cannot be read")
            return
        }
        guard contents == example.code else {
            let pageLines = example.code.split(separator: "\n", omittingEmptySubsequences: false)
            let fileLines = contents.split(separator: "\n", omittingEmptySubsequences: false)
            let first =
                zip(pageLines, fileLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(pageLines.count, fileLines.count)
            Issue.record(
                """
                \(example.testDescription) differs from \(file), which it quotes: first at the file's line \(first + 1) \
                (the page's line \(example.line + first)); copy the file into the page's block
                """)
            return
        }
    }

    /// The extraction finds the blocks (so the test above cannot pass by finding none), and the pages of `Loop`,
    /// `LoopThread` and every item type show an example.
    @Test func thePagesHaveExamples() throws {
        let examples = try DocumentationExamples.all()
        #expect(examples.contains { $0.page == "README.md" })
        #expect(examples.contains { $0.page.hasPrefix("Docs/") })
        #expect(examples.contains { $0.page == "Docs/Tutorial.md" && $0.isService }, "the tutorial's service")
        let quotations = try DocumentationExamples.quotations()
        #expect(quotations.contains { $0.page == "Docs/TestingAndDiagnosing.md" }, "the Swift Testing examples")
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

            ```swift file=Tests/Some/QuotedTests.swift
            @Test func quoted() {}
            ```
            """
        let found = DocumentationExamples.blocks(in: page, page: "page.md")
        #expect(found.last?.quotedFile == "Tests/Some/QuotedTests.swift")
        #expect(found.last?.code == "@Test func quoted() {}\n")
        let blocks = found.filter { $0.quotedFile == nil }
        #expect(blocks.count == 2)
        #expect(blocks.first?.code == "print(\"one\")   // prints \"one\"\n")
        #expect(blocks.first?.line == 4)
        #expect(blocks.first?.promisedOutput == ["one"])
        #expect(blocks.last?.code == "import Glibc\nprint(\"two\")\n")
        #expect(blocks.last?.program == "import RunLoopKit\nimport Glibc\nprint(\"two\")\n")
        #expect(blocks.last?.index == 2)
    }
}
