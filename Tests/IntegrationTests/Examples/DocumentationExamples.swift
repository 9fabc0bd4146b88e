import Foundation
import Glibc
import Testing

/// One ```` ```swift ```` block of the package's pages, taken as a whole program: what a reader gets by pasting it
/// alone into an executable's `main.swift`, with `import RunLoopKit` added when the block does not say it.
struct DocumentationExample: Sendable, CustomTestStringConvertible {
    /// The page, relative to the package's root (`README.md`, `Docs/Signals.md`, ...).
    let page: String
    /// Which ```` ```swift ```` block of the page, from 1.
    let index: Int
    /// The page's line of the block's first code line.
    let line: Int
    /// The block's code, its fence's indentation removed.
    let code: String
    /// Whether the block is a service (a ```` ```swift service ```` fence), which runs until it is told to stop: see
    /// `DocumentationExamplesTests.exerciseService`.
    var isService = false
    /// The test file the block quotes (a ```` ```swift file=Tests/… ```` fence), relative to the package's root, or
    /// `nil`: such a block is no program but a copy of a file `swift test` runs, which must match it byte for byte.
    var quotedFile: String?

    var testDescription: String { "\(page) swift block \(index) (line \(line))" }

    /// `main.swift`: the block, after `import RunLoopKit` when the block lacks it (a reader adds that line, and
    /// nothing else: every other import the program needs is in the block).
    var program: String {
        code.split(separator: "\n").contains("import RunLoopKit") ? code : "import RunLoopKit\n" + code
    }

    /// What the page promises the program prints, from comments `// prints "…"`: standard output contains each.
    var promisedOutput: [String] { quoted(after: "// prints ") }

    /// What the page promises the program never prints, from comments `// never prints "…"`.
    var forbiddenOutput: [String] { quoted(after: "// never prints ") }

    /// Whether the block imports a module of ``DocumentationExamples/compiledElsewhere``.
    var importsAPackageOfItsOwn: Bool {
        code.split(separator: "\n").contains { line in
            DocumentationExamples.compiledElsewhere.contains { line == "import \($0)" }
        }
    }

    /// Whether the block is an `async` main served by `Loop.main`, which links the `RunLoopKitAsyncMain` product.
    var usesAsyncMainProduct: Bool { code.split(separator: "\n").contains("import RunLoopKitAsyncMain") }
    /// The opt-in library products the block imports besides `RunLoopKit` (services, the Foundation bridge), whose
    /// objects it links; the async-main product is ``usesAsyncMainProduct``.
    var optInProducts: [String] {
        let lines = code.split(separator: "\n")
        return ["RunLoopKitServices", "RunLoopKitFoundation"].filter { lines.contains("import \($0)"[...]) }
    }

    /// The `"…"` strings that directly follow `marker` in the code.
    private func quoted(after marker: String) -> [String] {
        var found: [String] = []
        var rest = code[...]
        while let markerRange = rest.range(of: marker) {
            rest = rest[markerRange.upperBound...]
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else { continue }
            found.append(String(rest[rest.index(after: rest.startIndex)..<close]))
            rest = rest[close...]
        }
        return found
    }
}

/// The pages whose Swift examples must work pasted into `main.swift`, and the blocks on them.
enum DocumentationExamples {
    /// The package's root: the nearest folder above this file that holds `Package.swift`.
    static let packageRoot: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
                return folder
            }
            folder.deleteLastPathComponent()
        }
        fatalError("no Package.swift above \(#filePath)")
    }()

    /// README.md, every Markdown file of Docs/ (not its subfolders), and every Markdown file of the DocC catalog
    /// (its articles and its Extensions/ pages), relative to the root, sorted.
    static func pages() -> [String] {
        var pages = ["README.md"]
        pages += markdownFiles(in: "Docs", recursive: false)
        pages += markdownFiles(in: "Sources/RunLoopKit/RunLoopKit.docc", recursive: true)
        pages += markdownFiles(in: "Sources/RunLoopKitServices/RunLoopKitServices.docc", recursive: true)
        return pages
    }

    /// Every ```` ```swift ```` block of every page, but those that import a package RunLoopKit does not depend on
    /// (see ``compiledElsewhere``) and those that quote a test file (see ``quotations()``).
    static func all() throws -> [DocumentationExample] {
        try everyBlock().filter { !$0.importsAPackageOfItsOwn && $0.quotedFile == nil }
    }

    /// Every ```` ```swift file=… ```` block of every page: a Swift Testing example, which cannot run as
    /// `main.swift`, quoted from a test file that `swift test` runs (Tests/RunLoopKitTests/DocExamples/).
    static func quotations() throws -> [DocumentationExample] {
        try everyBlock().filter { $0.quotedFile != nil }
    }

    private static func everyBlock() throws -> [DocumentationExample] {
        try pages().flatMap { page in
            let text = try String(contentsOf: packageRoot.appendingPathComponent(page), encoding: .utf8)
            return blocks(in: text, page: page)
        }
    }

    /// Modules of other packages that Docs/Services.md's recipes beside swift-service-lifecycle import: this package
    /// cannot build them (it keeps no dependencies), so scripts/check/lifecycle-check.sh copies those blocks into
    /// scripts/check/lifecycle-check, a package of its own that depends on them, compiles them there and runs them.
    static let compiledElsewhere: Set<String> = ["ServiceLifecycle", "Metrics", "Logging"]

    /// The ```` ```swift ```` blocks of `text`, the ```` ```swift service ```` ones (a service the test stops with
    /// SIGTERM) and the ```` ```swift file=PATH ```` ones (a quoted test file). A fence may be indented (inside a list
    /// item); its block ends at the next line that is only ```` ``` ````. A ```` ```swift gtk ```` block (a GTK app,
    /// which needs GTK's headers) is not one of them: scripts/check/gtk-check.sh compiles and runs it, under Xvfb.
    static func blocks(in text: String, page: String) -> [DocumentationExample] {
        var examples: [DocumentationExample] = []
        var open: (line: Int, indent: Int, isService: Bool, quotedFile: String?, lines: [String])?
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(rawLine)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var block = open {
                if trimmed == "```" {
                    let code = block.lines.joined(separator: "\n") + "\n"
                    examples.append(
                        DocumentationExample(
                            page: page, index: examples.count + 1, line: block.line, code: code,
                            isService: block.isService, quotedFile: block.quotedFile))
                    open = nil
                } else {
                    block.lines.append(String(line.dropFirst(min(block.indent, leadingSpaces(line)))))
                    open = block
                }
            } else if trimmed == "```swift" || trimmed == "```swift service" {
                let isService = trimmed.hasSuffix("service")
                open = (
                    line: offset + 2, indent: leadingSpaces(line), isService: isService, quotedFile: nil, lines: []
                )
            } else if trimmed.hasPrefix("```swift file=") {
                let file = String(trimmed.dropFirst("```swift file=".count))
                open = (
                    line: offset + 2, indent: leadingSpaces(line), isService: false, quotedFile: file, lines: []
                )
            }
        }
        return examples
    }

    private static func leadingSpaces(_ line: String) -> Int { line.prefix { $0 == " " }.count }

    private static func markdownFiles(in folder: String, recursive: Bool) -> [String] {
        let base = packageRoot.appendingPathComponent(folder)
        let names: [String]
        if recursive {
            names = (FileManager.default.enumerator(atPath: base.path)?.allObjects as? [String]) ?? []
        } else {
            names = (try? FileManager.default.contentsOfDirectory(atPath: base.path)) ?? []
        }
        return names.filter { $0.hasSuffix(".md") }.sorted().map { "\(folder)/\($0)" }
    }
}

/// Compiles an example as `main.swift` against the objects the package's build already made, and runs it.
struct ExampleBuilder: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The output of a finished child process.
    struct Outcome: Sendable {
        let status: Int32
        let standardOutput: String
        let standardError: String
    }

    /// The build folder holding the test bundle, `RunLoopKit.build/` and `Modules/` (e.g. `.build/debug`).
    let buildFolder: URL
    let swiftc: URL
    /// The sanitizer the package was built with (`swift test --sanitize=…`), if any: `thread` or `address`.
    let sanitizer: String?

    /// The builder for this test process's build, or a failure that says what is missing.
    static func forThisBuild() throws -> ExampleBuilder {
        let buildFolder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for needed in ["RunLoopKit.build", "CRunLoopShims.build/module.modulemap", "Modules/RunLoopKit.swiftmodule"] {
            guard FileManager.default.fileExists(atPath: buildFolder.appendingPathComponent(needed).path) else {
                throw Failure(description: "no \(needed) in \(buildFolder.path) (the test bundle's folder)")
            }
        }
        return ExampleBuilder(buildFolder: buildFolder, swiftc: try findSwiftc(), sanitizer: sanitizerOfThisProcess())
    }

    /// `swiftc` on `PATH`, else the toolchain's usual place on this machine.
    static func findSwiftc() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/swiftc" } + ["/opt/swift/usr/bin/swiftc"]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Failure(description: "no swiftc on PATH or at /opt/swift/usr/bin")
        }
        return URL(fileURLWithPath: found)
    }

    /// `thread` or `address` when this process carries that sanitizer's runtime (then so do the package's objects,
    /// which `swift test --sanitize=…` built with it), else `nil`: its entry point is found (`dlsym` with
    /// `RTLD_DEFAULT`), or its shared library is mapped.
    static func sanitizerOfThisProcess() -> String? {
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        if dlsym(nil, "__tsan_init") != nil || maps.contains("libclang_rt.tsan") {
            return "thread"
        }
        if dlsym(nil, "__asan_init") != nil || maps.contains("libclang_rt.asan") {
            return "address"
        }
        return nil
    }

    /// The C target of each opt-in product that has one (the services' signal relay): its objects are linked and
    /// its module map passed with the product's.
    static let cTargets = ["RunLoopKitServices": "CRunLoopKitServices"]

    /// The object files to link: the library, its system layer and C shims, plus the opt-in products (services, the
    /// Foundation bridge) with their C targets, and the async-main product when asked for.
    ///
    /// Taken from the link list SwiftPM wrote for a product that links them (the test bundle's own, or
    /// async-main-check's), not from the folders: a folder keeps the objects of source files renamed or deleted
    /// since, which would link twice.
    func objects(asyncMain: Bool, products: [String]) throws -> [String] {
        var folders = ["RunLoopKit.build", "RunLoopKitSystem.build", "CRunLoopShims.build"]
        folders += products.map { "\($0).build" }
        folders += products.compactMap { Self.cTargets[$0] }.map { "\($0).build" }
        if asyncMain { folders += ["RunLoopKitAsyncMain.build", "CRunLoopKitAsyncMain.build"] }
        let product = asyncMain ? "async-main-check" : "RunLoopKitPackageTests"
        let list = buildFolder.appendingPathComponent("\(product).product/Objects.LinkFileList")
        guard let text = try? String(contentsOf: list, encoding: .utf8) else {
            throw Failure(description: "no link list at \(list.path)")
        }
        let paths = text.split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
        return try folders.flatMap { folder in
            let objects = paths.filter { $0.contains("/\(folder)/") && $0.hasSuffix(".o") }
            guard !objects.isEmpty else { throw Failure(description: "no \(folder) objects in \(list.path)") }
            return objects.sorted()
        }
    }

    /// The `swiftc` arguments that build `source` into `executable` in Swift 6 language mode.
    func compilerArguments(source: URL, executable: URL, asyncMain: Bool, products: [String]) throws -> [String] {
        let build = buildFolder.path
        let shimsHeaders = DocumentationExamples.packageRoot.appendingPathComponent("Sources/CRunLoopShims/include")
        var arguments = [
            "-swift-version", "6", source.path, "-I", "\(build)/Modules",
            "-Xcc", "-fmodule-map-file=\(build)/CRunLoopShims.build/module.modulemap",
            "-Xcc", "-I\(shimsHeaders.path)",
        ]
        if asyncMain {
            arguments += ["-Xcc", "-fmodule-map-file=\(build)/CRunLoopKitAsyncMain.build/module.modulemap"]
        }
        for cTarget in products.compactMap({ Self.cTargets[$0] }) {
            let headers = DocumentationExamples.packageRoot.appendingPathComponent("Sources/\(cTarget)/include")
            arguments += [
                "-Xcc", "-fmodule-map-file=\(build)/\(cTarget).build/module.modulemap", "-Xcc", "-I\(headers.path)",
            ]
        }
        if let sanitizer { arguments.append("-sanitize=\(sanitizer)") }
        return arguments + (try objects(asyncMain: asyncMain, products: products)) + ["-o", executable.path]
    }

    /// Writes `example` as `main.swift` in `folder`, compiles it, and answers the executable, or a failure with the
    /// compiler's messages.
    func compile(_ example: DocumentationExample, in folder: URL) async throws -> URL {
        let source = folder.appendingPathComponent("main.swift")
        try example.program.write(to: source, atomically: true, encoding: .utf8)
        let executable = folder.appendingPathComponent("example")
        let arguments = try compilerArguments(
            source: source, executable: executable, asyncMain: example.usesAsyncMainProduct,
            products: example.optInProducts)
        let outcome = try await Self.run(swiftc, arguments: arguments, in: folder, deadline: .seconds(300))
        guard outcome.status == 0 else {
            throw Failure(
                description: "swiftc failed (exit \(outcome.status)) for \(source.path):\n"
                    + outcome.standardError + outcome.standardOutput)
        }
        return executable
    }

    /// Runs `executable` with `arguments` and waits for it, without blocking a thread; kills it and throws once
    /// `deadline` has passed. Its output goes to files in `folder` (no pipe to fill up).
    ///
    /// Started with `posix_spawn`, with an empty signal mask and every signal's default disposition, as from a
    /// shell: the test runner's threads block some signals (Swift Testing's threads come from Dispatch's), and a
    /// child would inherit that mask, so an example that waits for a signal it sends itself would wait forever.
    ///
    /// `whileRunning`, when given, is called once the child is started, with its process id and the path of its
    /// standard output (a service's test talks to it and then stops it); the deadline counts from its return.
    static func run(
        _ executable: URL, arguments: [String] = [], in folder: URL, deadline: Duration,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        whileRunning: (@Sendable (pid_t, String) async -> Void)? = nil
    ) async throws -> Outcome {
        let outputPath = folder.appendingPathComponent("\(executable.lastPathComponent).stdout").path
        let errorPath = folder.appendingPathComponent("\(executable.lastPathComponent).stderr").path

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        sigdelset(&everySignal, SIGKILL)
        sigdelset(&everySignal, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw Failure(description: "posix_spawn \(executable.path) failed: \(String(cString: strerror(spawned)))")
        }

        await whileRunning?(pid, outputPath)
        var status: CInt = 0
        let end = ContinuousClock.now + deadline
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard ContinuousClock.now < end else {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                let printed = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
                throw Failure(
                    description: "\(executable.path) still running after \(deadline): killed. Its output:\n\(printed)")
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        // Exit status, or 128 + the signal that ended it (as a shell reports it).
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(
            status: exitStatus,
            standardOutput: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "",
            standardError: (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "")
    }
}

/// At most `count` holders at a time: compiling every example at once would swamp the machine.
actor ExampleSlots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { free = count }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
