import Glibc
import RunLoopKitSystem

extension LoopThread {
    /// How a ``LoopThread``'s worker thread is made: its stack size, the CPUs it may run on, and its scheduling
    /// policy. Each `nil` keeps today's default; ``LoopThread/init(name:options:)`` checks the values and applies
    /// them when it creates the thread (through the thread's `pthread_attr_t`), so the thread is born with them and
    /// no block ever runs without them.
    ///
    /// ```swift
    /// let audio = try LoopThread(
    ///     name: "audio",
    ///     options: .init(stackSize: 256 * 1024, cpuAffinity: [0], scheduling: .batch))
    /// ```
    ///
    /// A plain value: make and change it on any thread.
    public struct Options: Sendable, Hashable, CustomStringConvertible {
        /// The worker's stack size in bytes, or `nil` for the C library's default (glibc: the soft `RLIMIT_STACK`,
        /// usually 8 MiB; musl: 128 KiB, too small for much Swift code, which is why a static Linux build may want
        /// this).
        ///
        /// At least `PTHREAD_STACK_MIN` (16 KiB on x86_64 and arm64; smaller values are
        /// ``LoopError/Code/invalidArgument``), rounded up to a whole number of pages (as Foundation's
        /// `Thread.stackSize` and CF do): ``LoopThread/options`` shows the size asked of the C library. glibc may
        /// hand the thread the cached stack of an exited thread instead, never smaller and at most four times
        /// larger. The minimum is the C library's, not the loop's: leave room for the loop (a few KiB) and for what
        /// your blocks need.
        public var stackSize: Int?
        /// The CPUs the worker may run on, by index (0 is the first CPU, as `taskset -c` and `sched_getcpu(3)`
        /// number them), or `nil` to keep its creator's affinity.
        ///
        /// Non-empty, and each index below the number of CPUs the system was configured with (and below 1024,
        /// glibc's `CPU_SETSIZE`); else ``LoopError/Code/invalidArgument``. A set with no CPU the process may use
        /// (all offline, or outside its cpuset) is refused by the kernel, also as `invalidArgument`.
        public var cpuAffinity: Set<Int>?
        /// The worker's scheduling policy and priority, or `nil` to keep its creator's (inherited, as for any
        /// thread).
        public var scheduling: Scheduling?
        /// Whether the worker's loop runs on virtual time (``Loop/isVirtual``), for tests: its clock starts at 0 ns
        /// and moves when the loop is durably idle (``Loop/advancesWhenIdle``) or when a block on the thread calls
        /// ``Loop/advance(by:in:)``. Default `false`. Code on the thread reads the loop's time with
        /// ``Loop/Instant/now``; other threads read ``Loop/now`` (Docs/TestingAndDiagnosing.md).
        public var virtualTime = false

        /// Options for a worker thread; the defaults make it as ``LoopThread/init(name:options:)`` always did.
        public init(stackSize: Int? = nil, cpuAffinity: Set<Int>? = nil, scheduling: Scheduling? = nil) {
            self.stackSize = stackSize
            self.cpuAffinity = cpuAffinity
            self.scheduling = scheduling
        }

        /// The options that are set, e.g. "stack 262144 bytes, CPUs [0, 1], SCHED_BATCH", or "defaults".
        public var description: String {
            let parts = [
                stackSize.map { "stack \($0) bytes" }, cpuAffinity.map { "CPUs \($0.sorted())" },
                scheduling.map(\.description), virtualTime ? "virtual time" : nil,
            ]
            let set = parts.compactMap { $0 }
            return set.isEmpty ? "defaults" : set.joined(separator: ", ")
        }
    }

    /// A scheduling policy of sched(7) for a ``LoopThread``'s worker, with its priority for the real-time ones.
    ///
    /// `SCHED_OTHER`, `SCHED_BATCH` and `SCHED_IDLE` need no privilege; `SCHED_FIFO` and `SCHED_RR` need
    /// `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least the priority, else the thread is not made and
    /// ``LoopThread/init(name:options:)`` throws ``LoopError/Code/schedulingNotPermitted``. A nice value is not
    /// part of it (Linux keeps one per thread, set with `setpriority(2)` on ``LoopThread/threadID``). A plain value.
    public struct Scheduling: Sendable, Hashable, CustomStringConvertible {
        enum Policy: Sendable, Hashable {
            case other, batch, idle, fifo, roundRobin
        }

        let policy: Policy
        /// The static priority: for ``fifo(priority:)`` and ``roundRobin(priority:)`` as given (Linux takes 1...99,
        /// higher runs first); 0 for the other policies.
        public let priority: Int

        /// `SCHED_OTHER`, the default time-sharing policy: explicit, so a worker made by a real-time thread does not
        /// inherit the real-time policy.
        public static let other = Scheduling(policy: .other, priority: 0)
        /// `SCHED_BATCH`: time-sharing for CPU-bound work that should not preempt interactive threads.
        public static let batch = Scheduling(policy: .batch, priority: 0)
        /// `SCHED_IDLE`: runs only when nothing else wants the CPU.
        public static let idle = Scheduling(policy: .idle, priority: 0)

        /// `SCHED_FIFO` at `priority` (1...99 on Linux, from `sched_get_priority_min/max(2)`; else
        /// ``LoopError/Code/invalidArgument``): real-time, runs until it sleeps or a higher priority wakes.
        public static func fifo(priority: Int) -> Scheduling { Scheduling(policy: .fifo, priority: priority) }
        /// `SCHED_RR` at `priority` (1...99 on Linux; else ``LoopError/Code/invalidArgument``): `SCHED_FIFO` with a
        /// time slice among threads of the same priority.
        public static func roundRobin(priority: Int) -> Scheduling {
            Scheduling(policy: .roundRobin, priority: priority)
        }

        /// The policy's C name, with the priority of a real-time one: "SCHED_FIFO priority 10", "SCHED_BATCH".
        public var description: String {
            switch policy {
            case .fifo, .roundRobin: "\(ThreadScheduling.name(of: cPolicy)) priority \(priority)"
            case .other, .batch, .idle: ThreadScheduling.name(of: cPolicy)
            }
        }

        /// The kernel's number for the policy.
        var cPolicy: CInt {
            switch policy {
            case .other: ThreadScheduling.otherPolicy
            case .batch: ThreadScheduling.batchPolicy
            case .idle: ThreadScheduling.idlePolicy
            case .fifo: ThreadScheduling.fifoPolicy
            case .roundRobin: ThreadScheduling.roundRobinPolicy
            }
        }
    }
}

extension LoopThread.Options {
    /// These options checked, the stack size rounded up to whole pages: what the thread is made with. Throws
    /// ``LoopError/Code/invalidArgument`` naming the value and its valid range. Any thread.
    func validated(for name: String) throws(LoopError) -> Self {
        var result = self
        if let size = stackSize {
            let minimum = ThreadCalls.minimumStackSize
            let page = ThreadCalls.pageSize
            guard size >= minimum, size <= Int.max - page else {
                throw LoopError(
                    .invalidArgument,
                    message: "LoopThread \(name): stack size \(size) bytes is outside \(minimum)...\(Int.max - page) "
                        + "(at least PTHREAD_STACK_MIN; rounded up to \(page)-byte pages)")
            }
            result.stackSize = (size + page - 1) / page * page
        }
        if let cpus = cpuAffinity {
            let count = min(ThreadCalls.configuredCPUCount, ThreadCalls.cpuSetCapacity)
            guard !cpus.isEmpty else {
                throw LoopError(
                    .invalidArgument,
                    message: "LoopThread \(name): the CPU affinity is empty; give at least one CPU in 0...\(count - 1)")
            }
            if let outside = cpus.sorted().first(where: { !(0..<count).contains($0) }) {
                throw LoopError(
                    .invalidArgument,
                    message: "LoopThread \(name): CPU \(outside) is outside this system's CPUs 0...\(count - 1)")
            }
        }
        if let scheduling {
            let range: ClosedRange<Int>
            do {
                range = try ThreadCalls.priorityRange(of: scheduling.cPolicy)
            } catch {
                throw LoopError(
                    .invalidArgument, errno: error.errno,
                    message: "LoopThread \(name): this kernel does not know \(scheduling): \(error)")
            }
            guard range.contains(scheduling.priority) else {
                let policy = ThreadScheduling.name(of: scheduling.cPolicy)
                throw LoopError(
                    .invalidArgument,
                    message: "LoopThread \(name): \(scheduling) is outside \(policy)'s priorities "
                        + "\(range.lowerBound)...\(range.upperBound)")
            }
        }
        return result
    }

    /// The kernel's scheduling for ``scheduling``, if any.
    private var threadScheduling: ThreadScheduling? {
        scheduling.map { ThreadScheduling(policy: $0.cPolicy, priority: CInt($0.priority)) }
    }

    /// What `pthread_create` applies: everything but a policy its attributes cannot carry. Validated options only.
    var attributes: ThreadAttributes {
        var attributes = ThreadAttributes()
        attributes.stackSize = stackSize
        attributes.cpus = cpuAffinity
        attributes.scheduling = threadScheduling.flatMap { $0.isSettableAtCreation ? $0 : nil }
        return attributes
    }

    /// What the new thread applies to itself before it makes its loop: `SCHED_BATCH` and `SCHED_IDLE`, which
    /// glibc's `pthread_attr_setschedpolicy(3)` refuses.
    var schedulingSetByThread: ThreadScheduling? {
        threadScheduling.flatMap { $0.isSettableAtCreation ? nil : $0 }
    }

    /// A failed call of the thread's making, as the error ``LoopThread/init(name:options:)`` throws: `EPERM` for a
    /// requested policy is ``LoopError/Code/schedulingNotPermitted``, `EINVAL` for requested options is
    /// ``LoopError/Code/invalidArgument`` (the kernel refused them: say, no CPU of the affinity is usable), anything
    /// else (and anything with default options, as before) ``LoopError/Code/systemCallFailed``.
    func error(_ error: SystemError, startingThread name: String) -> LoopError {
        let context = "starting LoopThread \(name)"
        if error.errno == EPERM, let scheduling {
            return LoopError(
                .schedulingNotPermitted, errno: error.errno,
                message: "\(context): the kernel refused \(scheduling) (a real-time policy needs CAP_SYS_NICE or "
                    + "RLIMIT_RTPRIO of at least its priority): \(error)")
        }
        if error.errno == EINVAL, self != Self() {
            return LoopError(
                .invalidArgument, errno: error.errno,
                message: "\(context): the kernel refused its options (\(self)): \(error)")
        }
        // Not LoopError(_:context:): its EPERM means a descriptor epoll refuses, not a thread attribute.
        return LoopError(systemCall: error, context: context)
    }
}
