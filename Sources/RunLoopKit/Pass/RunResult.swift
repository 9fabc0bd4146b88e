extension Loop {
    /// Why a run returned, with CF's numbering (`kCFRunLoopRunFinished` is 1).
    public enum RunResult: Int, Sendable, CustomStringConvertible {
        /// The mode had no sources, descriptor sources, timers or pending blocks, before or during the run.
        case finished = 1
        /// ``Loop/stop()`` ended the run.
        case stopped = 2
        /// The run's time limit passed.
        case timedOut = 3
        /// A source was handled and the run was asked to return after one.
        case handledSource = 4

        /// The result's name.
        public var description: String {
            switch self {
            case .finished: "finished"
            case .stopped: "stopped"
            case .timedOut: "timedOut"
            case .handledSource: "handledSource"
            }
        }
    }
}
