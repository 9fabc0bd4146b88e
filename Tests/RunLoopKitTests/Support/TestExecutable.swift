import Foundation

/// Runs one of the package's test executables (built next to the test bundle) in a child process: for what only a
/// process's real main thread or its entry point can show.
enum TestExecutable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `name` with `arguments`, standard error merged into standard output; answers the exit status and the
    /// output. Throws if it cannot start or is still running after `timeout` (then it is killed).
    static func run(
        _ name: String, arguments: [String] = [], timeout: Duration = .seconds(120)
    ) throws -> (status: Int32, output: String) {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent(name)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Foundation.Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { usleep(1000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw Failure(description: "\(name) \(arguments): still running after \(timeout)")
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, text)
    }
}
