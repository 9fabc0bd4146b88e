import Glibc
import RunLoopKit
import Synchronization

/// Every broken promise the soak saw, wherever it saw it: printed at once on standard error (the first few) and
/// counted for the final report, whose exit status is 1 if there is any.
final class Violations: Sendable {
    /// The soak's one collection.
    static let shared = Violations()

    /// How many are printed as they happen and kept for the report.
    static let kept = 40

    private let state = Mutex<(count: Int, messages: [String])>((0, []))
    private let start = Loop.Instant.now

    /// Records a violation described by `message`. Safe from any thread.
    func record(_ message: String) {
        let line = "[\(Format.seconds(Loop.Instant.now - start)) s] \(message)"
        let keep = state.withLock { state in
            state.count += 1
            guard state.messages.count < Self.kept else { return false }
            state.messages.append(line)
            return true
        }
        if keep {
            StandardError.print("loop-soak: VIOLATION \(line)")
        }
    }

    /// How many violations were recorded.
    var count: Int { state.withLock { $0.count } }

    /// The first ``kept`` violations, oldest first.
    var messages: [String] { state.withLock { $0.messages } }
}
