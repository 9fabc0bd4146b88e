import RunLoopKitSystem
import Synchronization

extension StallMonitor {
    /// The watchdog's judgement, called at each check on the watchdog thread. Safe from any thread (its state is
    /// behind a mutex, uncontended: only the watchdog's timer uses it).
    final class Watchdog: Sendable {
        let heartbeat: Heartbeat
        let threshold: Duration
        let consecutiveChecks: Int

        /// Protected by the mutex.
        private let state = Locked<State>(State())

        private struct State {
            /// The busy beat seen at the last checks, and how many checks in a row saw it.
            var watched: UInt64 = 0
            var sightings = 0
            /// The beat already reported: one stall, one report.
            var reported: UInt64 = 0
        }

        init(heartbeat: Heartbeat, threshold: Duration, consecutiveChecks: Int) {
            self.heartbeat = heartbeat
            self.threshold = threshold
            self.consecutiveChecks = consecutiveChecks
        }

        /// Looks at the heartbeat once; answers the stall to report, if this check completes one.
        func check(now: Loop.Instant) -> (beat: Beat, duration: Duration)? {
            guard let beat = heartbeat.load(), beat.isBusy else {
                state.withLock { $0.sightings = 0 }
                return nil
            }
            let duration = now - beat.since
            return state.withLock { state in
                if state.watched == beat.word {
                    state.sightings += 1
                } else {
                    state.watched = beat.word
                    state.sightings = 1
                }
                guard state.sightings >= consecutiveChecks, duration >= threshold, state.reported != beat.word else {
                    return nil
                }
                state.reported = beat.word
                return (beat, duration)
            }
        }
    }
}
