extension Loop {
    /// What a loop's flight recorder holds at one moment: its last passes, and in each the callouts it made, with
    /// their kind, where their item or block was made and how long they ran.
    ///
    /// Read with ``Loop/flightRecording()`` from any thread, or found in a ``StallMonitor/Report`` while the
    /// recorder is on (``Loop/enableFlightRecorder(passes:calloutsPerPass:)``). A value: it does not change as the
    /// loop goes on. A pass or callout still in progress when it was taken counts up to ``takenAt``.
    public struct FlightRecording: Sendable {
        /// When the recording was copied (the monotonic clock).
        public let takenAt: Instant
        /// The passes the ring held, oldest first: at most the `passes` the recorder was enabled with. The last one
        /// may still be in progress.
        public let passes: [Pass]

        /// Made by the loop only, so the type can gain fields without breaking code that reads it.
        init(takenAt: Instant, passes: [Pass]) {
            self.takenAt = takenAt
            self.passes = passes
        }

        /// The longest callouts of the last pass, longest first: what kept the loop busy most recently (for a
        /// stalled loop, the pass that is stuck). At most `limit` of them.
        public func longestCallouts(ofLastPass limit: Int = 1) -> [Callout] {
            guard let last = passes.last, limit > 0 else { return [] }
            return Array(last.callouts.sorted { $0.duration > $1.duration }.prefix(limit))
        }

        /// One pass of the loop, as recorded.
        public struct Pass: Sendable {
            /// The pass's number in this recorder's life, from 1 (passes of nested runs included, in the order
            /// they began).
            public let number: Int
            /// When the pass began (the end of the previous pass of its run, or the run's start).
            public let startedAt: Instant
            /// How long it lasted, its sleep included; for a pass in progress, up to ``FlightRecording/takenAt``.
            public let duration: Duration
            /// The pass had not ended when the recording was taken.
            public let isInProgress: Bool
            /// Its callouts, in the order they began (a callout that ran a nested run comes before that run's
            /// passes' callouts, which are recorded in passes of their own).
            public let callouts: [Callout]
            /// Callouts the pass made beyond the recorder's `calloutsPerPass`: counted, not recorded.
            public let droppedCallouts: Int

            init(
                number: Int, startedAt: Int64, duration: Int64, isInProgress: Bool, callouts: [Callout],
                droppedCallouts: Int
            ) {
                self.number = number
                self.startedAt = Instant(nanoseconds: startedAt)
                self.duration = .nanoseconds(duration)
                self.isInProgress = isInProgress
                self.callouts = callouts
                self.droppedCallouts = droppedCallouts
            }
        }

        /// One call the loop made into code of yours, as recorded.
        public struct Callout: Sendable, CustomStringConvertible {
            /// What the loop called.
            public enum Kind: UInt8, Sendable, CustomStringConvertible {
                /// A block queued with ``Loop/perform(in:_:file:line:)-(Mode,_,_,_)`` (or a function call queued
                /// with ``Loop/perform(in:with:_:file:line:)``).
                case block = 1
                /// An actor job or task run on the loop's executor.
                case actorJob
                /// A ``LoopSource``'s perform handler.
                case source
                /// A ``LoopTimer``'s handler.
                case timer
                /// A one-shot callback scheduled with ``Loop/schedule(at:tolerance:in:_:file:line:)`` or its
                /// other forms.
                case callback
                /// A ``LoopObserver``'s handler.
                case observer
                /// A descriptor source's handler (``FileDescriptorSource`` and the services' sources).
                case descriptor
                /// A drain of Dispatch's main queue (`Loop.main` only).
                case mainQueue

                /// The kind's name, as in a report: `block`, `actor job`, `source`, `timer`, `callback`, `observer`,
                /// `descriptor`, `main queue`.
                public var description: String {
                    switch self {
                    case .block: "block"
                    case .actorJob: "actor job"
                    case .source: "source"
                    case .timer: "timer"
                    case .callback: "callback"
                    case .observer: "observer"
                    case .descriptor: "descriptor"
                    case .mainQueue: "main queue"
                    }
                }
            }

            /// What was called.
            public let kind: Kind
            /// Where the block was queued or the item made, packed.
            let site: CallSite
            /// When the callout began.
            public let startedAt: Instant
            /// How long it ran, nested runs included; for a callout in progress, up to
            /// ``FlightRecording/takenAt``.
            public let duration: Duration
            /// The callout had not returned when the recording was taken.
            public let isInProgress: Bool

            init(kind: Kind, site: CallSite, startedAt: Int64, duration: Int64, isInProgress: Bool) {
                self.kind = kind
                self.site = site
                self.startedAt = Instant(nanoseconds: startedAt)
                self.duration = .nanoseconds(duration)
                self.isInProgress = isInProgress
            }

            /// The `#fileID` (`Module/File.swift`) of the place the block was queued, the callback scheduled or the
            /// item made; `nil` when it is not known (actor jobs, the main queue, a callback scheduled before the
            /// loop's recorder was first enabled).
            public var file: String? { site.file }
            /// The line of that place; 0 when it is not known.
            public var line: Int { site.line }

            /// E.g. `block performed at App/Worker.swift:42 ran 78.0 ms (still running)`; a callback was `scheduled
            /// at`, an item `made at`.
            public var description: String {
                var text = "\(kind)"
                if let file {
                    text += kind == .block ? " performed at" : kind == .callback ? " scheduled at" : " made at"
                    text += " \(file):\(line)"
                }
                text += " ran \(StallMonitor.Report.milliseconds(duration))"
                if isInProgress { text += " (still running)" }
                return text
            }
        }
    }
}
