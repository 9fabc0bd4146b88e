import RunLoopKit
import Synchronization

/// Tells the drivers, at the end of each of their rounds, whether to go on, park or leave.
///
/// Every driver calls ``checkpoint(_:)`` between rounds, where it holds only its long-lived resources (its round's
/// timers fired, its children reaped, its churned thread joined). The orchestrator ``pause(deadline:)``s them all
/// there to count descriptors and threads at the same point of every round, then resumes or stops them.
final class RunControl: Sendable {
    private enum State: Int {
        case running, pausing, stopping
    }

    private let state = Atomic<Int>(State.running.rawValue)
    private let registered = Mutex<[String]>([])
    private let parked = Mutex<Set<String>>([])
    private let finished = Mutex<Set<String>>([])

    /// Adds a driver called `name`; every name must be unique.
    func register(_ name: String) {
        registered.withLock { $0.append(name) }
    }

    /// Called by driver `name` between rounds: answers `true` to run another round, `false` to leave. Blocks while
    /// the run is paused.
    func checkpoint(_ name: String) -> Bool {
        while true {
            switch State(rawValue: state.load(ordering: .acquiring))! {
            case .running:
                return true
            case .stopping:
                finished.withLock { _ = $0.insert(name) }
                return false
            case .pausing:
                parked.withLock { _ = $0.insert(name) }
                Waiting.until(.distantFuture) { state.load(ordering: .acquiring) != State.pausing.rawValue }
                parked.withLock { _ = $0.remove(name) }
            }
        }
    }

    /// Asks every driver to park at its next checkpoint and waits until all have; answers the ones that did not
    /// by `deadline` (empty when all did).
    func pause(deadline: Loop.Instant) -> [String] {
        state.store(State.pausing.rawValue, ordering: .releasing)
        Waiting.until(deadline) { missing(from: parked).isEmpty }
        return missing(from: parked)
    }

    /// Lets parked drivers go on.
    func resume() {
        state.store(State.running.rawValue, ordering: .releasing)
    }

    /// Makes every driver leave at its next checkpoint (parked ones at once) and waits until all have; answers the
    /// ones that did not by `deadline`.
    func stop(deadline: Loop.Instant) -> [String] {
        state.store(State.stopping.rawValue, ordering: .releasing)
        Waiting.until(deadline) { missing(from: finished).isEmpty }
        return missing(from: finished)
    }

    /// Whether the drivers were told to leave.
    var isStopping: Bool { state.load(ordering: .acquiring) == State.stopping.rawValue }

    private func missing(from set: borrowing Mutex<Set<String>>) -> [String] {
        let present = set.withLock { $0 }
        return registered.withLock { $0 }.filter { !present.contains($0) }
    }
}
