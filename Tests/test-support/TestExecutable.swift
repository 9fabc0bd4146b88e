import Foundation
import Glibc
import Testing

/// Runs one of the package's test executables (built next to the test bundle) in a child process: for what only a
/// process's real main thread or its entry point can show.
///
/// Spawned with `posix_spawn` and reaped with `waitpid` by this code, not through Foundation's `Process`: under the
/// sanitizer runs `Process` sometimes never noticed a child that had exited (it stayed a zombie, and the test waited
/// for good).
package enum TestExecutable {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    /// A started child, standard error merged into standard output (kept in a temporary file).
    package struct Child {
        package let pid: pid_t
        package let label: String
        package let outputDescriptor: CInt
        package let outputPath: String

        /// What the child has written so far.
        package var output: String {
            String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self)
        }

        /// Whether the child has exited, without reaping it (``wait(timeout:)`` still answers its status).
        package var hasExited: Bool {
            var info = siginfo_t()
            return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo == SIGCHLD
        }

        /// Waits for the child to exit; answers the exit status (128 + the signal for a child a signal ended) and
        /// the output. Throws if it is still running after `timeout` (then it is killed).
        package func wait(timeout: Duration = .seconds(120)) throws -> (status: Int32, output: String) {
            defer {
                close(outputDescriptor)
                unlink(outputPath)
            }
            let deadline = ContinuousClock.now + timeout
            var status: CInt = 0
            while true {
                let reaped = waitpid(pid, &status, WNOHANG)
                if reaped == pid { break }
                if reaped == -1 && errno != EINTR {
                    throw Failure(description: "\(label): waitpid failed: errno \(errno)")
                }
                if ContinuousClock.now >= deadline {
                    kill(pid, SIGKILL)
                    _ = waitpid(pid, &status, 0)
                    throw Failure(description: "\(label): still running after \(timeout)")
                }
                usleep(1000)
            }
            let bytes = FileManager.default.contents(atPath: outputPath) ?? Data()
            let text = String(decoding: bytes, as: UTF8.self)
            let exited = status & 0x7f == 0
            return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), text)
        }
    }

    /// The path of the package's test executable `name`.
    package static func path(of name: String) -> String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Runs `name` with `arguments`, standard error merged into standard output; answers the exit status (128 +
    /// the signal for a child a signal ended) and the output. Throws if it cannot start or is still running after
    /// `timeout` (then it is killed).
    package static func run(
        _ name: String, arguments: [String] = [], timeout: Duration = .seconds(120)
    ) throws -> (status: Int32, output: String) {
        try start(executable: path(of: name), arguments: arguments).wait(timeout: timeout)
    }

    /// Starts `executable` (a path) with `arguments` and the test process's environment plus `environment`.
    package static func start(
        executable: String, arguments: [String] = [], environment: [String: String] = [:]
    ) throws -> Child {
        var template = Array("/tmp/runloopkit-test-output-XXXXXX".utf8CString)
        let outputDescriptor = mkstemp(&template)
        guard outputDescriptor >= 0 else { throw Failure(description: "mkstemp failed: errno \(errno)") }
        let outputPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outputDescriptor, STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, outputDescriptor, STDERR_FILENO)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { $1 }
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0)=\($1)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            close(outputDescriptor)
            unlink(outputPath)
            throw Failure(description: "\(executable): posix_spawn failed: errno \(spawned)")
        }
        return Child(
            pid: pid, label: "\(executable) \(arguments)", outputDescriptor: outputDescriptor, outputPath: outputPath)
    }
}

/// A scenario of a check executable (`main-loop-check`, `glib-check`, `foundation-check`) that runs on a child
/// process's real main thread and checks itself, answering "PASS <name> <figures>" only if all it shows held.
package struct CheckScenario: Sendable, CustomTestStringConvertible {
    /// The executable's argument.
    package let name: String
    /// What the scenario shows.
    package let shows: String
    package init(name: String, shows: String) {
        self.name = name
        self.shows = shows
    }
    package var testDescription: String { "\(name): \(shows)" }
}

extension TestExecutable {
    /// Runs `scenario` of the check `executable` in a child process; answers the figures of its "PASS" line (the
    /// last line), throws on anything else.
    package static func passingFigures(of executable: String, _ scenario: String) throws -> String {
        let (status, text) = try run(executable, arguments: [scenario])
        let verdict = text.split(separator: "\n").last.map(String.init) ?? ""
        guard status == 0, verdict.hasPrefix("PASS \(scenario)") else {
            throw Failure(description: "\(scenario): exit \(status), output:\n\(text)")
        }
        return String(verdict.dropFirst("PASS \(scenario)".count))
    }

    /// ``passingFigures(of:_:)`` for a scenario that takes long: it waits for the child without holding a thread of
    /// the cooperative pool (two on a 2-CPU machine), which other suites' tasks need meanwhile.
    package static func passingFigures(
        of executable: String, _ scenario: String, timeout: Duration
    ) async throws -> String {
        let child = try start(executable: path(of: executable), arguments: [scenario])
        let deadline = ContinuousClock.now + timeout
        while !child.hasExited && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let (status, text) = try child.wait(timeout: .zero)
        let verdict = text.split(separator: "\n").last.map(String.init) ?? ""
        guard status == 0, verdict.hasPrefix("PASS \(scenario)") else {
            throw Failure(description: "\(scenario): exit \(status), output:\n\(text)")
        }
        return String(verdict.dropFirst("PASS \(scenario)".count))
    }
}
