import Foundation
import Glibc
import Testing

/// The figures tests measure (reliability counts, latencies, pass costs) for the notes and Docs to quote. A plain
/// `swift test` prints test results only; the figures are printed when asked for:
///
///     RUNLOOPKIT_TEST_FIGURES=1 swift test --filter SignalSource
///
/// Every figure line a test prints goes through ``report(_:)``. What explains a failure belongs in the failing
/// expectation's comment instead, where it is shown whether or not figures were asked for.
package enum TestFigures {
    /// Whether figures were asked for (`RUNLOOPKIT_TEST_FIGURES=1`).
    package static let enabled = ProcessInfo.processInfo.environment["RUNLOOPKIT_TEST_FIGURES"] == "1"

    /// Prints `text` (one line or several, a final newline optional) when figures were asked for: in one `write`
    /// to standard output, so that the runner's own lines, written at the same time, never split it.
    package static func report(_ text: @autoclosure () -> String) {
        guard enabled else { return }
        var text = text()
        if !text.hasSuffix("\n") { text += "\n" }
        fflush(nil)  // What was printed before goes first.
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// What an exit test's child process wrote to its standard output, captured by the runner: its figures passed on
    /// (``report(_:)``, without the `verdict: ok` lines), and the whole text answered, so that the expectation judging
    /// the child can show it when it fails.
    package static func childOutput(_ result: ExitTest.Result?) -> String {
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let figures = output.split(separator: "\n").filter { $0 != "verdict: ok" }
        if !figures.isEmpty { report(figures.joined(separator: "\n")) }
        return output
    }
}
