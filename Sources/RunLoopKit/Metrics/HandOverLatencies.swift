extension Loop {
    /// How long work handed to a loop waited before it began to run, per kind of work: the figure servers alert on
    /// (tokio's schedule-latency histogram, Go's `/sched/latencies:seconds`). Each kind is a
    /// ``LoopDelayMonitor/Distribution`` of the values recorded since ``Loop/enableHandOverLatencies()``.
    ///
    /// A snapshot, taken with ``Loop/handOverLatencies()`` from any thread; it does not change afterwards. Made by
    /// the loop only, so it can gain kinds without breaking code that reads it.
    public struct HandOverLatencies: Sendable, Hashable, CustomStringConvertible {
        /// Blocks posted from other threads (``Loop/perform(in:_:file:line:)-(Mode,_,_,_)`` and the other `perform` calls): from
        /// the post (read on the posting thread before it takes the inbox's lock) to the block starting to run.
        /// Blocks a loop queues for itself are not counted.
        public let blocks: LoopDelayMonitor.Distribution
        /// Actor jobs and task-executor jobs enqueued on the loop, from any thread, its own included: from the
        /// enqueue to the job starting to run.
        public let jobs: LoopDelayMonitor.Distribution
        /// Work on `Loop.main`'s Dispatch main queue: libdispatch tells no one when work was queued, so this is
        /// from the return of the loop's `epoll_wait` that reported the main queue's eventfd to the drain starting
        /// (the time the loop knew of it and did not serve it yet); the wait before that is not known.
        public let mainQueue: LoopDelayMonitor.Distribution
        /// Timer lateness: from a ``LoopTimer``'s fire date (when it was due) to its handler starting, on the
        /// loop's clock (on virtual time, the virtual clock's). One value per firing.
        public let timers: LoopDelayMonitor.Distribution
        /// Descriptor sources: from the return of the loop's last `epoll_wait` that reported events (the kernel's
        /// readiness time is not known through epoll) to the source's handler starting. It counts what the loop did
        /// after waking (observers, earlier handlers of the pass, timers of step 9), not the time the descriptor was
        /// ready while the loop was busy before its wait. Calls for a failed registration are not counted.
        public let descriptors: LoopDelayMonitor.Distribution

        init(_ recorder: HandOverRecorder) {
            blocks = recorder.distribution(of: .block)
            jobs = recorder.distribution(of: .job)
            mainQueue = recorder.distribution(of: .mainQueue)
            timers = recorder.distribution(of: .timer)
            descriptors = recorder.distribution(of: .descriptor)
        }

        /// One line per kind, e.g. `blocks: 120 delays: min 2µs, mean 9µs, p50 7µs, …`.
        public var description: String {
            "blocks: \(blocks)\njobs: \(jobs)\nmain queue: \(mainQueue)\ntimers: \(timers)\ndescriptors: \(descriptors)"
        }
    }
}
