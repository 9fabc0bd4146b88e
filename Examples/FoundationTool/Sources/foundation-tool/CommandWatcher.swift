import Foundation
import RunLoopKit

extension Notification.Name {
    /// Posted on the main thread for each line the command prints; `userInfo["line"]` holds the line.
    static let commandPrintedLine = Notification.Name("CommandWatcher.printedLine")
    /// Posted when the command has exited, on the thread `Process` reports it on; `userInfo["status"]` holds its status.
    static let commandExited = Notification.Name("CommandWatcher.exited")
}

/// Runs a command with `Process` and follows it on the main thread until it has exited and its output has ended.
///
/// Foundation's part: `Process`, a repeating `Timer` for progress, and `NotificationCenter` for each line and for the
/// exit. RunLoopKit's part: a `FileDescriptorSource` reads the output (Foundation on Linux cannot watch a descriptor
/// in its run loop) and a callback on `Loop.main` stops a command that runs too long. Main thread only.
@MainActor final class CommandWatcher {
    private let process = Process()
    private let output = Pipe()
    private let startDate = Date()
    private var pending: [UInt8] = []
    private var lineCount = 0
    private var outputEnded = false
    private var exited = false
    private var progress: Timer?
    private var observers: [NSObjectProtocol] = []
    private var timeout: Loop.ScheduledCallback?
    private(set) var isFinished = false
    private(set) var exitStatus: Int32 = 0

    init(command: [String]) {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")  // Finds the command in PATH.
        process.arguments = command
        process.standardOutput = output
    }

    /// Starts the command and everything that follows it.
    func start() throws {
        let center = NotificationCenter.default
        observers.append(
            center.addObserver(forName: .commandPrintedLine, object: nil, queue: nil) { notification in
                let line = notification.userInfo?["line"] as? String ?? ""
                MainActor.assumeIsolated { self.show(line) }  // Posted on the main thread: delivered right there.
            })
        observers.append(
            center.addObserver(forName: .commandExited, object: nil, queue: .main) { notification in
                let status = notification.userInfo?["status"] as? Int32 ?? -1
                MainActor.assumeIsolated { self.processExited(status: status) }
            })
        process.terminationHandler = { process in
            center.post(name: .commandExited, object: nil, userInfo: ["status": process.terminationStatus])
        }
        progress = Timer.scheduledTimer(withTimeInterval: 0.25, repeats: true) { _ in
            MainActor.assumeIsolated { print("  ... \(self.elapsed) s, \(self.lineCount) lines so far") }
        }
        let mainLoop = Loop.main.assumeIsolated()
        let reader = try mainLoop.makeDescriptorSource(descriptor: output.fileHandleForReading.fileDescriptor) {
            source, _ in self.readOutput(from: source)
        }
        try Loop.main.add(reader)
        timeout = try mainLoop.schedule(after: .seconds(10)) { self.process.terminate() }
        try process.run()
    }

    private var elapsed: String { String(format: "%.2f", Date().timeIntervalSince(startDate)) }

    private func readOutput(from source: FileDescriptorSource) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(source.descriptor, &buffer, buffer.count)
        if count > 0 {
            pending += buffer[..<count]
        } else if !pending.isEmpty {
            pending.append(UInt8(ascii: "\n"))  // The output ended in the middle of a line: end that line.
        }
        while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeSubrange(...end)
            NotificationCenter.default.post(name: .commandPrintedLine, object: nil, userInfo: ["line": line])
        }
        if count <= 0 {  // End of output (or an error): stop watching.
            source.invalidate()
            outputEnded = true
            finishIfDone()
        }
    }

    private func show(_ line: String) {
        lineCount += 1
        print("[\(elapsed) s] \(line)")
    }

    private func processExited(status: Int32) {
        exited = true
        exitStatus = status
        finishIfDone()
    }

    private func finishIfDone() {
        guard outputEnded && exited else { return }
        progress?.invalidate()
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
        if let timeout { Loop.main.cancel(timeout) }
        isFinished = true
        print("foundation-tool: the command exited with status \(exitStatus) after \(elapsed) s, \(lineCount) lines")
    }
}
