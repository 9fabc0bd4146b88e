/// What a loop handled, by kind: the callouts it made, counted in ``Loop/Metrics`` over the loop's life and in
/// ``Loop/PassFigures`` per pass.
extension Loop {
    /// How many callouts of each kind a loop made: sources performed, descriptor reports, timers fired, one-shot
    /// callbacks, observer calls, blocks, actor jobs and main-queue drains.
    ///
    /// A value type with no thread of its own: read it from a ``Loop/Metrics`` snapshot (any thread) or from the
    /// figures handed to a pass handler (the loop's thread). Subtract two to get what happened between them.
    public struct HandledCounts: Sendable, Hashable, CustomStringConvertible {
        /// Custom sources (``LoopSource``) performed.
        public var sourcesPerformed: Int
        /// Calls of descriptor sources' handlers (``FileDescriptorSource``, and the helpers built on it such as
        /// `SignalSource`), the last call of a failed source (``DescriptorBackedSource/Events/invalid``) included.
        public var descriptorReports: Int
        /// Timers (``LoopTimer``) fired.
        public var timersFired: Int
        /// One-shot callbacks (``Loop/schedule(at:tolerance:in:_:)``) run.
        public var callbacksRun: Int
        /// Observer (``LoopObserver``) calls, those at a run's entry and exit included.
        public var observerCalls: Int
        /// Blocks and function calls queued with `perform` that ran.
        public var blocksRun: Int
        /// Actor jobs run (an actor whose executor is the loop's).
        public var jobsRun: Int
        /// Drains of Dispatch's main queue (main loop only; one drain runs every main-queue item queued then).
        public var mainQueueDrains: Int

        /// Counts with the given values, zero by default. Made by the loop only, so the type can gain counts
        /// without breaking code that reads it.
        init(
            sourcesPerformed: Int = 0,
            descriptorReports: Int = 0,
            timersFired: Int = 0,
            callbacksRun: Int = 0,
            observerCalls: Int = 0,
            blocksRun: Int = 0,
            jobsRun: Int = 0,
            mainQueueDrains: Int = 0
        ) {
            self.sourcesPerformed = sourcesPerformed
            self.descriptorReports = descriptorReports
            self.timersFired = timersFired
            self.callbacksRun = callbacksRun
            self.observerCalls = observerCalls
            self.blocksRun = blocksRun
            self.jobsRun = jobsRun
            self.mainQueueDrains = mainQueueDrains
        }

        /// Every count added up: the callouts made.
        public var total: Int {
            sourcesPerformed + descriptorReports + timersFired + callbacksRun + observerCalls + blocksRun + jobsRun
                + mainQueueDrains
        }

        /// What was handled between `earlier` and `later` (counts of the same loop): each count's difference.
        public static func - (later: HandledCounts, earlier: HandledCounts) -> HandledCounts {
            HandledCounts(
                sourcesPerformed: later.sourcesPerformed &- earlier.sourcesPerformed,
                descriptorReports: later.descriptorReports &- earlier.descriptorReports,
                timersFired: later.timersFired &- earlier.timersFired,
                callbacksRun: later.callbacksRun &- earlier.callbacksRun,
                observerCalls: later.observerCalls &- earlier.observerCalls,
                blocksRun: later.blocksRun &- earlier.blocksRun,
                jobsRun: later.jobsRun &- earlier.jobsRun,
                mainQueueDrains: later.mainQueueDrains &- earlier.mainQueueDrains)
        }

        /// The counts in one line, e.g. `3 sources performed, 1 descriptor report, 0 timers fired, …`.
        public var description: String {
            func count(_ value: Int, _ one: String, _ many: String) -> String { "\(value) \(value == 1 ? one : many)" }
            return [
                count(sourcesPerformed, "source performed", "sources performed"),
                count(descriptorReports, "descriptor report", "descriptor reports"),
                count(timersFired, "timer fired", "timers fired"),
                count(callbacksRun, "callback run", "callbacks run"),
                count(observerCalls, "observer call", "observer calls"),
                count(blocksRun, "block run", "blocks run"),
                count(jobsRun, "job run", "jobs run"),
                count(mainQueueDrains, "main-queue drain", "main-queue drains"),
            ].joined(separator: ", ")
        }
    }
}
