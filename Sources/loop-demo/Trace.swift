import Glibc
import RunLoopKit
import Synchronization

/// Printing for the demo: every line carries the time since the scenario started and the thread it came from.
enum Trace {
    /// The scenario's start, in monotonic nanoseconds.
    private static let start = Atomic<Int64>(0)

    /// Restarts the clock the trace lines are stamped with.
    static func restartClock() {
        start.store(Loop.Instant.now.nanoseconds, ordering: .relaxed)
    }

    /// Prints `message` stamped with the elapsed time and `thread`.
    static func line(_ thread: String, _ message: String) {
        let elapsed = Double(Loop.Instant.now.nanoseconds - start.load(ordering: .relaxed)) / 1_000_000
        print("  \(pad(format(elapsed, decimals: 1), 7)) ms  \(pad(thread, -7)) \(message)")
    }

    /// Prints a heading line.
    static func heading(_ text: String) {
        print("\n== \(text)")
    }

    /// `value` with a fixed number of decimals (no Foundation).
    static func format(_ value: Double, decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale)
        guard decimals > 0 else { return "\(whole)" }
        let fraction = String(abs(scaled % Int(scale)))
        let sign = scaled < 0 && whole == 0 ? "-" : ""
        return "\(sign)\(whole).\(String(repeating: "0", count: decimals - fraction.count))\(fraction)"
    }

    /// Pads `text` to `width` columns: on the left for a positive width, on the right for a negative one.
    static func pad(_ text: String, _ width: Int) -> String {
        let missing = abs(width) - text.count
        guard missing > 0 else { return text }
        let padding = String(repeating: " ", count: missing)
        return width > 0 ? padding + text : text + padding
    }

    /// Microseconds between two instants, as a whole number.
    static func microseconds(from start: Loop.Instant, to end: Loop.Instant) -> Int64 {
        (end.nanoseconds - start.nanoseconds) / 1_000
    }
}
