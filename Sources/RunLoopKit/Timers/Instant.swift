import CRunLoopShims
import RunLoopKitSystem

extension Loop {
    /// A point in time on `CLOCK_MONOTONIC`, the clock every loop deadline uses, or on the clock of a loop on virtual
    /// time (``Loop/isVirtual``), which counts from 0 ns by default.
    ///
    /// Wall-clock changes never move it. Arithmetic saturates instead of overflowing.
    public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
        /// Nanoseconds since the clock's origin (boot).
        public let nanoseconds: Int64

        /// Creates an instant `nanoseconds` after the clock's origin.
        public init(nanoseconds: Int64) {
            self.nanoseconds = nanoseconds
        }

        /// The current time as the calling thread's loop sees it: `CLOCK_MONOTONIC`, or, on the thread of a loop on
        /// virtual time (``Loop/isVirtual``), that loop's time (``Loop/now``). Any thread.
        ///
        /// The rule for virtual time: a thread reads its own loop's time. Code that makes a timer or schedules a
        /// callback for a virtual loop from another thread reads that loop's time, ``Loop/now``, instead
        /// (`LoopTimer(at: loop.now + delay)`): there `.now` is the monotonic clock. Costs one thread-local load more
        /// than reading the clock (Docs/Benchmarks.md, "Virtual time").
        @inline(__always)
        public static var now: Instant {
            if let virtual = VirtualClock.ofCurrentThread { return Instant(nanoseconds: virtual.now) }
            return Instant(nanoseconds: MonotonicClock.now())
        }

        /// An instant later than any a program will see.
        public static let distantFuture = Instant(nanoseconds: .max)

        /// The instant `duration` after this one, saturating at ``distantFuture``.
        public func advanced(by duration: Duration) -> Instant {
            Instant(nanoseconds: nanoseconds.addingSaturating(duration.saturatingNanoseconds))
        }

        /// The duration from this instant to `other` (negative when `other` is earlier).
        public func duration(to other: Instant) -> Duration {
            .nanoseconds(other.nanoseconds.subtractingSaturating(nanoseconds))
        }

        /// The instant `rhs` after `lhs`, saturating.
        public static func + (lhs: Instant, rhs: Duration) -> Instant { lhs.advanced(by: rhs) }

        /// The duration from `rhs` to `lhs`.
        public static func - (lhs: Instant, rhs: Instant) -> Duration { rhs.duration(to: lhs) }

        /// The instant `rhs` before `lhs`, saturating.
        public static func - (lhs: Instant, rhs: Duration) -> Instant {
            Instant(nanoseconds: lhs.nanoseconds.subtractingSaturating(rhs.saturatingNanoseconds))
        }

        /// Moves `lhs` `rhs` later, saturating.
        public static func += (lhs: inout Instant, rhs: Duration) { lhs = lhs + rhs }

        /// Moves `lhs` `rhs` earlier, saturating.
        public static func -= (lhs: inout Instant, rhs: Duration) { lhs = lhs - rhs }

        /// Orders instants by time.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

        /// The instant as seconds on the monotonic clock.
        public var description: String {
            let seconds = nanoseconds / 1_000_000_000
            let fraction = abs(nanoseconds % 1_000_000_000)
            let digits = String(fraction)
            return "\(seconds).\(String(repeating: "0", count: 9 - digits.count))\(digits)s (monotonic)"
        }
    }
}

extension Duration {
    /// Whether the duration is zero, read from its two words: `Duration` is frozen (its two-word layout is part of
    /// the ABI), while its `==` and `.zero` are calls into the standard library, about 20 instructions on every
    /// timer made and callback scheduled.
    @inline(__always)
    var isZero: Bool {
        let (low, high) = unsafeBitCast(self, to: (UInt64, UInt64).self)
        return low | high == 0
    }

    /// The duration in whole nanoseconds, clamped to `Int64`'s range (attoseconds beyond a nanosecond are dropped).
    var saturatingNanoseconds: Int64 {
        guard !isZero else { return 0 }  // The common tolerance; `components` divides 128-bit numbers.
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingSaturating(attoseconds / 1_000_000_000)
    }
}

extension Int64 {
    /// `self + other`, clamped to `Int64`'s range.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        if overflow { return other > 0 ? .max : .min }
        return sum
    }

    /// `self - other`, clamped to `Int64`'s range.
    func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        if overflow { return other < 0 ? .max : .min }
        return difference
    }
}
