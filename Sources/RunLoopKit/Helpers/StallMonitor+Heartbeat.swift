import Glibc
import RunLoopKitSystem
import Synchronization

extension StallMonitor {
    /// The watched loop's last activity and when it began, published with one atomic store per activity.
    ///
    /// Safe from any thread: the loop's observers call ``beat(_:)`` (no lock, no allocation, one `clock_gettime`
    /// through the vDSO and one release store); the watchdog calls ``load()``. Activity and time share one 64-bit
    /// word, so the watchdog never sees one without the other.
    final class Heartbeat: Sendable {
        /// The watched loop, whose time (``Loop/now``: monotonic, or virtual) the stamps are taken on.
        private let loop: Loop
        /// The time stamps are measured from, so they fit in 61 bits (73 years).
        private let origin: Int64
        /// `(nanoseconds since origin) << 3 | activity index`; 0 until the first activity.
        private let word = Atomic<UInt64>(0)
        /// The watched loop's kernel thread id, learned at its first activity; 0 until then.
        private let thread = Atomic<pid_t>(0)

        /// The activities in the order of their index in the word (index 0: none yet).
        private static let activities: [Loop.Activity] = [
            [], .entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit,
        ]

        init(loop: Loop) {
            self.loop = loop
            origin = loop.now.nanoseconds
        }

        /// Records that the loop entered `activity` now. Loop thread only (called from its observers).
        func beat(_ activity: Loop.Activity) {
            if thread.load(ordering: .relaxed) == 0 {
                thread.store(ThreadIdentity.currentThreadID(), ordering: .relaxed)
            }
            let index = UInt64(Self.activities.firstIndex(of: activity) ?? 0)
            let elapsed = UInt64(max(0, loop.now.nanoseconds - origin))
            word.store(elapsed << 3 | index, ordering: .releasing)
        }

        /// The last beat: the raw word (equal words mean no activity in between), the activity and its start.
        func load() -> Beat? {
            let value = word.load(ordering: .acquiring)
            guard value != 0 else { return nil }
            let activity = Self.activities[Int(value & 7)]
            let since = Loop.Instant(nanoseconds: origin + Int64(value >> 3))
            return Beat(word: value, activity: activity, since: since)
        }

        /// The watched loop's kernel thread id, 0 before its first activity.
        var threadID: pid_t { thread.load(ordering: .relaxed) }
    }

    /// One reading of the heartbeat.
    struct Beat: Equatable {
        let word: UInt64
        let activity: Loop.Activity
        let since: Loop.Instant

        /// Whether the loop is working rather than asleep or outside a run: from ``Loop/Activity/afterWaiting``
        /// (or a pass's or run's start) until the next ``Loop/Activity/beforeWaiting``.
        var isBusy: Bool {
            activity == .afterWaiting || activity == .beforeSources || activity == .beforeTimers
                || activity == .entry
        }
    }
}
