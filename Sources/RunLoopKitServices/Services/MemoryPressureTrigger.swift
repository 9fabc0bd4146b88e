import RunLoopKit
import RunLoopKitSystem

/// When a ``MemoryPressureSource`` fires: tasks stalled on memory for at least ``threshold`` within any
/// ``window`` (the kernel's pressure stall information, PSI). "some 150 ms in 2 s" fires once some task spent
/// 150 ms of a 2-second window waiting for memory (reclaim, refaults, swap-in); "full" counts only the time every
/// non-idle task was stalled at once.
///
/// Checked when made, against what the kernel's documentation (Documentation/accounting/psi.rst) allows: a
/// threshold above zero and at most the window, a window from 500 ms to 10 s, both in whole microseconds. One more
/// rule depends on the process: without `CAP_SYS_RESOURCE` the window must be a multiple of 2 s (Linux 6.4+; older
/// kernels accept no trigger at all from such a process). That one is checked by the kernel when the source arms
/// the trigger, and reported as `LoopError.Code.permissionDenied`.
///
/// A value type: any thread.
public struct MemoryPressureTrigger: Sendable, Hashable, CustomStringConvertible {
    /// Which stall time counts.
    public enum Stall: String, Sendable, Hashable {
        /// Time in which at least one task was stalled on memory.
        case some
        /// Time in which every non-idle task was stalled on memory at once.
        case full
    }

    /// The shortest window the kernel's documentation allows.
    public static let shortestWindow: Duration = .milliseconds(500)
    /// The longest window the kernel allows.
    public static let longestWindow: Duration = .seconds(10)
    /// What a window must be a multiple of when the process lacks `CAP_SYS_RESOURCE`.
    public static let unprivilegedWindowGranularity: Duration = .seconds(2)

    /// Which stall time counts.
    public let stall: Stall
    /// How much stall time within a window fires the source.
    public let threshold: Duration
    /// The window the stall time is measured over; also the shortest time between two firings.
    public let window: Duration

    /// A trigger firing when `stall` time reaches `threshold` within `window`.
    /// - Throws: `LoopError.Code.invalidArgument` for a threshold of zero or above the window, a window outside
    ///   500 ms...10 s, or a duration that is not a whole number of microseconds.
    public init(_ stall: Stall, threshold: Duration, window: Duration) throws(LoopError) {
        let thresholdMicroseconds = try Self.microseconds(threshold, "threshold")
        let windowMicroseconds = try Self.microseconds(window, "window")
        guard window >= Self.shortestWindow, window <= Self.longestWindow else {
            throw LoopError(
                .invalidArgument, message: "a memory-pressure window must be from 500 ms to 10 s, not \(window)")
        }
        guard thresholdMicroseconds > 0, thresholdMicroseconds <= windowMicroseconds else {
            throw LoopError(
                .invalidArgument,
                message: "a memory-pressure threshold must be above zero and at most the window (\(window)), "
                    + "not \(threshold)")
        }
        self.stall = stall
        self.threshold = threshold
        self.window = window
    }

    /// A trigger written as the kernel reads it, `"some 150000 2000000"` (microseconds), or with units,
    /// `"some 150ms 2s"` (`us`, `ms` or `s`; a number without a unit is microseconds).
    /// - Throws: `LoopError.Code.invalidArgument` for text of another form, and what
    ///   ``init(_:threshold:window:)`` throws.
    public init(parsing text: String) throws(LoopError) {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
        guard words.count == 3, let stall = Stall(rawValue: String(words[0])) else {
            throw LoopError(
                .invalidArgument,
                message: "\"\(text)\" is not a memory-pressure trigger (\"some|full <threshold> <window>\")")
        }
        try self.init(stall, threshold: Self.duration(words[1], in: text), window: Self.duration(words[2], in: text))
    }

    /// What is written to the pressure file: `"some 150000 2000000"`.
    public var description: String {
        "\(stall.rawValue) \(Self.wholeMicroseconds(threshold)) \(Self.wholeMicroseconds(window))"
    }

    /// Whether a process without `CAP_SYS_RESOURCE` may arm it (Linux 6.4+): its window is a multiple of 2 s.
    public var isAllowedUnprivileged: Bool {
        Self.wholeMicroseconds(window) % Self.wholeMicroseconds(Self.unprivilegedWindowGranularity) == 0
    }

    private static func microseconds(_ duration: Duration, _ name: String) throws(LoopError) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard attoseconds % 1_000_000_000_000 == 0, seconds >= 0, seconds < 4_000 else {
            throw LoopError(
                .invalidArgument,
                message: "a memory-pressure \(name) must be a whole number of microseconds, not \(duration)")
        }
        return wholeMicroseconds(duration)
    }

    private static func wholeMicroseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    private static func duration(_ word: Substring, in text: String) throws(LoopError) -> Duration {
        let units: [(String, (Int64) -> Duration)] = [
            ("us", { .microseconds($0) }), ("µs", { .microseconds($0) }), ("ms", { .milliseconds($0) }),
            ("s", { .seconds($0) }), ("", { .microseconds($0) }),
        ]
        for (unit, make) in units where word.hasSuffix(unit) {
            guard let value = Int64(word.dropLast(unit.count)), value >= 0, value < 4_000_000_000_000 else { break }
            return make(value)
        }
        throw LoopError(.invalidArgument, message: "\"\(word)\" in \"\(text)\" is not a duration (150000, 150ms, 2s)")
    }
}
