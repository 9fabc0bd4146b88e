import RunLoopKit
import Synchronization
import Testing

/// The code under test: connects, retrying 30 s after each failure, and gives up 5 minutes after it began.
final class Connection: Sendable {
    let loop: Loop
    let events = Mutex<[String]>([])
    private let connects: @Sendable (Int) -> Bool
    private let attempts = Atomic<Int>(0)
    private let watchdog: LoopTimer

    init(on loop: Loop, connects: @escaping @Sendable (_ attempt: Int) -> Bool) throws {
        self.loop = loop
        self.connects = connects
        watchdog = try LoopTimer(after: .seconds(300)) { _ in }
        try loop.add(watchdog)
        tryToConnect()
    }

    private var seconds: Int64 { loop.now.nanoseconds / 1_000_000_000 }

    private func tryToConnect() {
        let attempt = attempts.add(1, ordering: .relaxed).newValue
        guard watchdog.isValid else { return events.withLock { $0.append("gave up at \(seconds) s") } }
        if connects(attempt) {
            watchdog.invalidate()
            return events.withLock { $0.append("connected at \(seconds) s") }
        }
        _ = try? loop.schedule(after: .seconds(30)) { [self] in tryToConnect() }
    }
}

@Test func connectsAfterFiveBackOffs() throws {
    let events = try Loop.withVirtualTime { loop in
        let connection = try Connection(on: loop) { attempt in attempt == 6 }
        loop.run()  // Durably idle between attempts: the clock jumps 30 s at a time, no waiting.
        return connection.events.withLock { $0 }
    }
    #expect(events == ["connected at 150 s"])
}
