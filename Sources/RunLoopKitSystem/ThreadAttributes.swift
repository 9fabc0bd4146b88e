import CRunLoopShims
import Glibc

/// A scheduling policy of sched(7) and its static priority, as the kernel takes them.
package struct ThreadScheduling: Sendable, Hashable, CustomStringConvertible {
    /// `SCHED_OTHER`, `SCHED_FIFO`, `SCHED_RR`, `SCHED_BATCH` or `SCHED_IDLE`.
    package let policy: CInt
    /// The static priority: 1...99 for the real-time policies on Linux, 0 for the others.
    package let priority: CInt

    package static let otherPolicy = CInt(SCHED_OTHER)
    package static let fifoPolicy = CInt(SCHED_FIFO)
    package static let roundRobinPolicy = CInt(SCHED_RR)
    package static let batchPolicy = CInt(CRUNLOOP_SCHED_BATCH)
    package static let idlePolicy = CInt(CRUNLOOP_SCHED_IDLE)

    package init(policy: CInt, priority: CInt) {
        self.policy = policy
        self.priority = priority
    }

    /// Whether `pthread_create(3)` can apply it from the thread's attributes: glibc's
    /// `pthread_attr_setschedpolicy(3)` takes `SCHED_OTHER`, `SCHED_FIFO` and `SCHED_RR` only (`EINVAL` for the
    /// others, which the thread sets on itself with ``ThreadCalls/setCurrentScheduling(_:)``).
    package var isSettableAtCreation: Bool {
        policy == Self.otherPolicy || policy == Self.fifoPolicy || policy == Self.roundRobinPolicy
    }

    /// The policy's C name, e.g. `SCHED_FIFO`.
    package static func name(of policy: CInt) -> String {
        switch policy {
        case otherPolicy: "SCHED_OTHER"
        case fifoPolicy: "SCHED_FIFO"
        case roundRobinPolicy: "SCHED_RR"
        case batchPolicy: "SCHED_BATCH"
        case idlePolicy: "SCHED_IDLE"
        default: "policy \(policy)"
        }
    }

    /// "SCHED_FIFO priority 10", or "SCHED_BATCH" for a policy without priorities.
    package var description: String {
        priority == 0 ? Self.name(of: policy) : "\(Self.name(of: policy)) priority \(priority)"
    }
}

/// What a new thread is born with besides the C library's defaults (``ThreadCalls/start(_:with:attributes:)``):
/// each `nil` keeps the default (glibc's stack size, from `RLIMIT_STACK`; the creator's CPU affinity and scheduling).
package struct ThreadAttributes: Sendable, Hashable {
    /// The stack size in bytes: at least ``ThreadCalls/minimumStackSize`` (else `EINVAL`).
    package var stackSize: Int?
    /// The CPUs the thread may run on, each in `0..<`\ ``ThreadCalls/cpuSetCapacity``.
    package var cpus: Set<Int>?
    /// An explicit policy and priority instead of the creator's; ``ThreadScheduling/isSettableAtCreation`` only.
    package var scheduling: ThreadScheduling?

    /// Every attribute the default; set the ones wanted.
    package init() {}

    /// Whether every attribute is the default (the thread is made with no attributes object at all).
    package var isDefault: Bool { stackSize == nil && cpus == nil && scheduling == nil }
}

/// A CPU set as the kernel takes it: glibc's fixed `cpu_set_t`, 1024 bits, bit n of byte n / 8 for CPU n.
struct CPUMask {
    var bytes = [UInt8](repeating: 0, count: ThreadCalls.cpuSetCapacity / 8)

    init() {}

    init(_ cpus: Set<Int>) {
        for cpu in cpus { bytes[cpu / 8] |= 1 << (cpu % 8) }
    }

    /// The CPUs whose bits are set, ascending.
    var cpus: [Int] {
        (0..<bytes.count * 8).filter { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 }
    }
}

extension ThreadCalls {
    /// The bits of glibc's `cpu_set_t` (`CPU_SETSIZE`, 1024): the CPU indices an affinity can name.
    package static let cpuSetCapacity = MemoryLayout<cpu_set_t>.size * 8

    /// The smallest stack a thread may be given (`PTHREAD_STACK_MIN`, 16 KiB on x86_64 and arm64), from
    /// `sysconf(_SC_THREAD_STACK_MIN)`.
    package static let minimumStackSize: Int = {
        let value = sysconf(CInt(_SC_THREAD_STACK_MIN))
        return value > 0 ? value : 16_384
    }()

    /// The size of a memory page, from `sysconf(_SC_PAGESIZE)`.
    package static let pageSize: Int = {
        let value = sysconf(CInt(_SC_PAGESIZE))
        return value > 0 ? value : 4096
    }()

    /// The CPUs the system was configured with (online or not), from `sysconf(_SC_NPROCESSORS_CONF)`; at least 1.
    package static var configuredCPUCount: Int { max(1, sysconf(CInt(_SC_NPROCESSORS_CONF))) }

    /// The static priorities `policy` takes (`sched_get_priority_min(2)`, `sched_get_priority_max(2)`): 1...99 for
    /// `SCHED_FIFO` and `SCHED_RR`, 0...0 for the others on Linux. `EINVAL`: not a policy.
    package static func priorityRange(of policy: CInt) throws(SystemError) -> ClosedRange<Int> {
        let low = try retryingOnInterrupt("sched_get_priority_min") { sched_get_priority_min(policy) }
        let high = try retryingOnInterrupt("sched_get_priority_max") { sched_get_priority_max(policy) }
        return Int(low)...Int(high)
    }

    /// Starts a joinable thread running `body(argument)` with `attributes`: ``start(_:with:)`` with a
    /// `pthread_attr_t` made for the call and destroyed after it, so the thread is born with its stack size,
    /// CPU affinity and scheduling.
    ///
    /// Throws the first call that failed: `pthread_attr_setstacksize(3)` (`EINVAL`: below `PTHREAD_STACK_MIN`),
    /// `pthread_attr_setaffinity_np(3)` (`EINVAL`: a CPU beyond the kernel's set size), `pthread_attr_setinheritsched(3)`,
    /// `pthread_attr_setschedpolicy(3)` (`EINVAL`: a policy glibc does not take there), `pthread_attr_setschedparam(3)`
    /// (`EINVAL`: a priority out of range), or `pthread_create(3)`: `EAGAIN` (no memory for the stack, or out of
    /// threads), `EPERM` (a real-time policy without `CAP_SYS_NICE` or a high enough `RLIMIT_RTPRIO`), `EINVAL`
    /// (none of the CPUs is one the thread may use: offline, or outside the process's cpuset). Nothing is started
    /// when it throws. None of these calls is interrupted: they answer their error instead of setting `errno`.
    package static func start(
        _ body: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?,
        with argument: UnsafeMutableRawPointer,
        attributes: ThreadAttributes
    ) throws(SystemError) -> pthread_t {
        guard !attributes.isDefault else { return try start(body, with: argument) }
        var made = pthread_attr_t()
        try attributeCall("pthread_attr_init") { pthread_attr_init(&made) }
        defer { pthread_attr_destroy(&made) }
        if let size = attributes.stackSize {
            try attributeCall("pthread_attr_setstacksize") { pthread_attr_setstacksize(&made, size) }
        }
        if let cpus = attributes.cpus {
            let mask = CPUMask(cpus)
            try attributeCall("pthread_attr_setaffinity_np") {
                mask.bytes.withUnsafeBytes { crunloop_attr_set_affinity(&made, $0.count, $0.baseAddress) }
            }
        }
        if let scheduling = attributes.scheduling {
            try attributeCall("pthread_attr_setinheritsched") {
                pthread_attr_setinheritsched(&made, CInt(PTHREAD_EXPLICIT_SCHED))
            }
            try attributeCall("pthread_attr_setschedpolicy") { pthread_attr_setschedpolicy(&made, scheduling.policy) }
            var parameter = sched_param(sched_priority: scheduling.priority)
            try attributeCall("pthread_attr_setschedparam") { pthread_attr_setschedparam(&made, &parameter) }
        }
        return try withUnsafePointer(to: &made) { (pointer) throws(SystemError) -> pthread_t in
            try create(body, with: argument, attributes: pointer)
        }
    }

    /// A `pthread_attr_*` call, which answers its error (0: done) and is never interrupted; debug builds ask
    /// ``FaultInjection`` first.
    private static func attributeCall(_ call: StaticString, _ body: () -> CInt) throws(SystemError) {
        #if RUNLOOPKIT_FAULT_INJECTION
        if let injected = FaultInjection.injectedErrno(call, on: -1) { throw SystemError(call: call, errno: injected) }
        #endif
        let status = body()
        guard status == 0 else { throw SystemError(call: call, errno: status) }
    }

    /// Gives the calling thread `scheduling` (`sched_setscheduler(2)` on thread 0): how a thread takes
    /// `SCHED_BATCH` or `SCHED_IDLE`, which `pthread_attr_setschedpolicy(3)` refuses. `EPERM`: a real-time policy, or
    /// leaving `SCHED_IDLE`, without the privilege; `EINVAL`: a priority out of the policy's range.
    package static func setCurrentScheduling(_ scheduling: ThreadScheduling) throws(SystemError) {
        var parameter = sched_param(sched_priority: scheduling.priority)
        _ = try retryingOnInterrupt("sched_setscheduler") { sched_setscheduler(0, scheduling.policy, &parameter) }
    }

    // MARK: What the calling thread has (for checks and diagnostics)

    /// The calling thread's scheduling policy and priority (`sched_getscheduler(2)`, `sched_getparam(2)`).
    package static func currentScheduling() throws(SystemError) -> ThreadScheduling {
        let policy = try retryingOnInterrupt("sched_getscheduler") { sched_getscheduler(0) }
        var parameter = sched_param()
        _ = try retryingOnInterrupt("sched_getparam") { sched_getparam(0, &parameter) }
        // The kernel may add SCHED_RESET_ON_FORK (0x40000000) to the policy it reports.
        return ThreadScheduling(policy: policy & ~0x4000_0000, priority: parameter.sched_priority)
    }

    /// The CPUs the calling thread may run on, ascending (`sched_getaffinity(2)`).
    package static func currentAffinity() throws(SystemError) -> [Int] {
        var mask = CPUMask()
        _ = try retryingOnInterrupt("sched_getaffinity") {
            mask.bytes.withUnsafeMutableBytes { crunloop_current_affinity($0.count, $0.baseAddress) }
        }
        return mask.cpus
    }

    /// The CPU the calling thread runs on at this instant (`sched_getcpu(3)`).
    package static func currentCPU() throws(SystemError) -> Int {
        Int(try retryingOnInterrupt("sched_getcpu") { crunloop_current_cpu() })
    }

    /// The calling thread's stack size in bytes, as it was made (`pthread_getattr_np(3)`,
    /// `pthread_attr_getstacksize(3)`; glibc puts the guard page beyond it). For the main thread, the size its
    /// stack may grow to (`RLIMIT_STACK`).
    package static func currentStackSize() throws(SystemError) -> Int {
        var size = 0
        try attributeCall("pthread_getattr_np") { crunloop_current_stack_size(&size) }
        return size
    }
}
