import RunLoopKit

/// W1's ping-pong: A posts a closure to B, whose closure posts one back to A, for a number of round trips. Used by
/// W1 and W1t and by workload A's `w1_perform` baseline.
///
/// `remaining`, `begin` and `end` are touched on A's thread only; the caller reads `begin` and `end` after `done`,
/// which orders the accesses.
final class Rally: @unchecked Sendable {
    /// Where a ball goes: a running loop, posted to with `Loop.perform` (W1), or a `LoopThread`, posted to with
    /// `LoopThread.perform` (W1t).
    enum Player: Sendable {
        case loop(Loop)
        case thread(LoopThread)

        // Always inlined: `Loop.perform`'s inlined front door made this switch too big for the optimizer to inline on its
        // own, which added a call per hop to W1 that has nothing to do with the loop (+3% instructions).
        @inline(__always) func post(_ block: @escaping @Sendable () -> Void) {
            switch self {
            case .loop(let loop):
                loop.perform(block)
            case .thread(let thread):
                guard thread.perform(block) else { fatalError("loop-bench: LoopThread.perform refused a block") }
            }
        }
    }

    let a: Player
    let b: Player
    private var remaining: Int
    private var begin: Int64 = 0
    private var end: Int64 = 0
    private let done = WaitCounter()

    private init(a: Player, b: Player, roundTrips: Int) {
        self.a = a
        self.b = b
        remaining = roundTrips
    }

    /// Plays `roundTrips` round trips between the running loops `a` and `b` with `Loop.perform`; see
    /// ``play(a:b:roundTrips:label:)-(Player,_,_,_)``.
    static func play(a: Loop, b: Loop, roundTrips: Int, label: String) throws -> Int64 {
        try play(a: Player.loop(a), b: Player.loop(b), roundTrips: roundTrips, label: label)
    }

    /// Plays `roundTrips` round trips between `a` and `b`; answers the elapsed nanoseconds, from the first post on A
    /// to A running the last reply. Throws (naming `label`) if it does not finish within 300 s.
    static func play(a: Player, b: Player, roundTrips: Int, label: String) throws -> Int64 {
        let rally = Rally(a: a, b: b, roundTrips: roundTrips)
        a.post { rally.start() }
        guard rally.done.wait() else { throw BenchmarkFailure("\(label): the rally did not finish within 300 s") }
        return rally.end - rally.begin
    }

    /// On A: starts the clock and sends the first ball.
    private func start() {
        begin = Clock.monotonic()
        serve()
    }

    /// On A: posts a closure to B that posts the reply back to A.
    private func serve() {
        b.post { [self] in
            a.post { [self] in reply() }
        }
    }

    /// On A: one round trip done.
    private func reply() {
        remaining -= 1
        if remaining > 0 {
            serve()
        } else {
            end = Clock.monotonic()
            done.increment()
        }
    }
}
