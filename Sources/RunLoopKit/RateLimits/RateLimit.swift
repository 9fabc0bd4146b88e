/// How often one source may be handled: at most ``burst`` handler calls within ``interval`` (systemd's
/// `sd_event_source_set_ratelimit(interval, burst)`). Set it as the ``LoopEventItem/rateLimit``,
/// ``LoopEventItem/rateLimit`` or ``LoopEventItem/rateLimit`` of an item; any thread may make one.
///
/// A window opens with the first handler call after the previous window ended. The call that would be the
/// `burst + 1`-th within it is not made: the item is paused until the window ends, then resumes, and nothing is lost
/// meanwhile (a custom source stays signalled, a descriptor's readiness is reported once it resumes, a timer's
/// firings due during the pause become one firing). CF has no rate limits; libuv neither.
public struct RateLimit: Hashable, Sendable, CustomStringConvertible {
    /// How many handler calls a window allows: 1 or more.
    public let burst: Int
    /// How long a window lasts: more than zero, at most ``LoopTimer/maximumInterval``.
    public let interval: Duration

    /// Creates a limit of `burst` handler calls per `interval`. Any thread.
    ///
    /// - Throws: ``LoopError/Code/invalidArgument`` for a burst below 1; ``LoopError/Code/invalidInterval`` for an
    ///   interval that is zero, negative or above ``LoopTimer/maximumInterval``. (A bad limit is usually read from a
    ///   configuration, so it is an error to report, not a trap.)
    public init(burst: Int, per interval: Duration) throws(LoopError) {
        guard burst >= 1 else {
            throw LoopError(.invalidArgument, message: "a rate limit's burst must be at least 1, got \(burst)")
        }
        guard interval > .zero, interval <= LoopTimer.maximumInterval else {
            throw LoopError(
                .invalidInterval, message: "a rate limit's interval must be in (0, 16 years], got \(interval)")
        }
        self.burst = burst
        self.interval = interval
    }

    /// The limit as text, e.g. `10 per 1.0 seconds`.
    public var description: String { "\(burst) per \(interval)" }
}
