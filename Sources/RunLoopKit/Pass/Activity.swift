extension Loop {
    /// The points of a run and of each pass that observers can watch, with CF's bit values.
    public struct Activity: OptionSet, Hashable, Sendable, CustomStringConvertible {
        /// The bits, equal to `CFRunLoopActivity`'s.
        public let rawValue: UInt32

        /// Creates an activity set from CF-compatible bits.
        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        /// A run is starting (once per run, before its first pass).
        public static let entry = Activity(rawValue: 1 << 0)
        /// A pass is about to look at timers.
        public static let beforeTimers = Activity(rawValue: 1 << 1)
        /// A pass is about to perform signalled custom sources.
        public static let beforeSources = Activity(rawValue: 1 << 2)
        /// The loop is about to sleep in `epoll_wait`.
        public static let beforeWaiting = Activity(rawValue: 1 << 5)
        /// The loop has woken from `epoll_wait`.
        public static let afterWaiting = Activity(rawValue: 1 << 6)
        /// A run is returning (once per run that sent ``entry``).
        public static let exit = Activity(rawValue: 1 << 7)
        /// Every activity.
        public static let all: Activity = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

        /// The activity's name, or the names of the set's members joined by `|`.
        public var description: String {
            let names: [(Activity, String)] = [
                (.entry, "entry"), (.beforeTimers, "beforeTimers"), (.beforeSources, "beforeSources"),
                (.beforeWaiting, "beforeWaiting"), (.afterWaiting, "afterWaiting"), (.exit, "exit"),
            ]
            let present = names.filter { contains($0.0) }.map(\.1)
            return present.isEmpty ? "[]" : present.joined(separator: "|")
        }
    }
}
