import Foundation

/// The figures tests measure (reliability counts, latencies, pass costs) for the notes and Docs to quote. A plain
/// `swift test` prints test results only; the figures are printed when asked for:
///
///     RUNLOOPKIT_TEST_FIGURES=1 swift test --filter SignalSource
///
/// Every figure line a test prints goes through ``report(_:)``. What explains a failure belongs in the failing
/// expectation's comment instead, where it is shown whether or not figures were asked for.
enum TestFigures {
    /// Whether figures were asked for (`RUNLOOPKIT_TEST_FIGURES=1`).
    static let enabled = ProcessInfo.processInfo.environment["RUNLOOPKIT_TEST_FIGURES"] == "1"

    /// Prints `text` (one line or several, a final newline optional) when figures were asked for.
    static func report(_ text: @autoclosure () -> String) {
        guard enabled else { return }
        let text = text()
        print(text.hasSuffix("\n") ? String(text.dropLast()) : text)
    }
}
