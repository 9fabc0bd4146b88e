import RunLoopKit
import Testing

/// The code under test: a client connection that closes after 60 s without a message.
final class IdleClient: Sendable {
    let loop: Loop
    private let idleTimeout: LoopTimer

    init(on loop: Loop) throws {
        self.loop = loop
        idleTimeout = try LoopTimer(at: loop.now + .seconds(60)) { _ in
            // Here the client would close its connection.
        }
        try loop.add(idleTimeout)
    }

    /// A message arrived (on the loop's thread): the client stays open for another 60 s.
    func received() { idleTimeout.setNextFireTime(loop.now + .seconds(60)) }

    /// Whether the idle timeout has not fired yet: a one-shot timer is invalid once it fired.
    var isOpen: Bool { idleTimeout.isValid }
}

@Test func closesAfterSixtyQuietSeconds() throws {
    try Loop.withVirtualTime(advancesWhenIdle: false) { loop in
        let client = try IdleClient(on: loop)
        try loop.advance(by: .seconds(50))
        loop.perform { client.received() }  // As a descriptor's handler would deliver a message.
        try loop.runUntilIdle()  // Runs the block; the clock stays at 50 s.
        #expect(loop.now == Loop.Instant(nanoseconds: 50_000_000_000))

        try loop.advance(by: .seconds(59))
        #expect(client.isOpen)  // 59 quiet seconds.
        try loop.advance(by: .seconds(1))
        #expect(!client.isOpen)  // 60: the timeout fired at 110 s.
    }
}
