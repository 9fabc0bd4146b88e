extension PassWorkQueue {
    /// What the queue's mutex protects: the tasks, and whether the keep-alive source sits in the modes.
    struct State {
        /// The tasks, oldest first, from `head` on; the consumed prefix is dropped once it is half the array.
        private var tasks: [@Sendable () -> Void] = []
        private var head = 0
        /// Whether the keep-alive source is in the queue's modes. Changed on the loop's thread only.
        var isInstalled = false
        /// Whether a block that installs the keep-alive source is on its way to the loop.
        var isInstallPosted = false
        /// Set once by `invalidate()`; no task is accepted or run afterwards.
        var isInvalidated = false
        /// The beforeWaiting observer, kept here so `invalidate()` can reach it; `nil` once invalidated.
        var observer: LoopObserver?

        /// The number of tasks not yet started.
        var pendingCount: Int { tasks.count - head }

        /// Appends a task at the end of the queue.
        mutating func append(_ task: @escaping @Sendable () -> Void) {
            tasks.append(task)
        }

        /// Takes the oldest task, if any.
        mutating func popFirst() -> (@Sendable () -> Void)? {
            guard head < tasks.count else { return nil }
            let task = tasks[head]
            head += 1
            if head == tasks.count {
                tasks.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= tasks.count {
                tasks.removeFirst(head)
                head = 0
            }
            return task
        }

        /// Drops every pending task; answers how many there were.
        mutating func removeAll() -> Int {
            let count = pendingCount
            tasks.removeAll()
            head = 0
            return count
        }
    }

    /// What the loop thread must do to the keep-alive source after looking at the state.
    enum KeepAliveChange {
        case none
        case install
        case uninstall
    }
}
