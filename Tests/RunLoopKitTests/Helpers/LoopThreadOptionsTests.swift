import Glibc
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKit

/// `LoopThread.Options`: the worker is born with the stack size, CPU affinity and scheduling policy it was given,
/// read back from inside the worker (what `pthread_getattr_np`, `sched_getaffinity`, `sched_getcpu` and
/// `sched_getscheduler` say there); invalid values are `invalidArgument` naming the value and its range; a refusal
/// by the kernel is a typed error with nothing left behind.
@Suite struct LoopThreadOptionsTests {
    /// What the worker of `thread` reads about itself.
    static func onWorker<T: Sendable>(_ thread: LoopThread, _ read: @escaping @Sendable () throws -> T) throws -> T {
        try thread.performAndWait(read)
    }

    /// A thread started with `options`, stopped after `body`.
    static func withThread<T>(
        _ options: LoopThread.Options, _ body: (LoopThread) throws -> T
    ) throws -> T {
        let thread = try LoopThread(name: "lt-options", options: options)
        defer { thread.stop() }
        return try body(thread)
    }

    // MARK: Stack size

    /// glibc keeps the stacks of exited threads for reuse, and hands a new thread a cached one that is at least the
    /// size asked for and at most four times it: so the worker has the size given, or a little more.
    static func isStack(_ size: Int, atLeast asked: Int) -> Bool {
        size >= asked && size <= 4 * asked
    }

    @Test(arguments: [256 * 1024, 16 * 1024 * 1024])
    func theWorkerHasTheStackSizeItWasGiven(_ size: Int) throws {
        try Self.withThread(.init(stackSize: size)) { (thread) throws in
            #expect(thread.options.stackSize == size)
            let stack = try Self.onWorker(thread) { try ThreadCalls.currentStackSize() }
            #expect(Self.isStack(stack, atLeast: size), "\(stack) bytes for \(size) asked")
        }
    }

    @Test func aStackSizeIsRoundedUpToWholePages() throws {
        let page = ThreadCalls.pageSize
        try Self.withThread(.init(stackSize: 256 * 1024 + 1)) { (thread) throws in
            #expect(thread.options.stackSize == 256 * 1024 + page)
            let stack = try Self.onWorker(thread) { try ThreadCalls.currentStackSize() }
            #expect(Self.isStack(stack, atLeast: 256 * 1024 + page), "\(stack) bytes")
            #expect(stack % page == 0)
        }
        let minimum = ThreadCalls.minimumStackSize
        let made = try LoopThread.Options(stackSize: minimum).validated(for: "check")
        #expect(made.stackSize == (minimum + page - 1) / page * page)
    }

    /// By default the worker gets what any thread of the process gets: glibc's default stack, the soft
    /// `RLIMIT_STACK` the process started with (8 MiB on most systems; 2 MiB or more when it is unlimited).
    @Test func byDefaultTheStackIsTheCLibrarysDefault() throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_STACK.rawValue), &limit)
        let unlimited = limit.rlim_cur >= rlim_t(Int.max)  // RLIM_INFINITY is all ones.
        let expected = unlimited ? 2 * 1024 * 1024 : Int(limit.rlim_cur) / ThreadCalls.pageSize * ThreadCalls.pageSize
        try Self.withThread(.init()) { (thread) throws in
            #expect(thread.options == LoopThread.Options())
            let stack = try Self.onWorker(thread) { try ThreadCalls.currentStackSize() }
            #expect(Self.isStack(stack, atLeast: expected), "\(stack) bytes, RLIMIT_STACK \(limit.rlim_cur)")
        }
    }

    /// Recursion that needs 1 MiB of stack runs on a worker given 4 MiB. Not under AddressSanitizer: the depth is
    /// measured by a local's address, which its fake stacks move off the thread's stack, so the recursion never sees
    /// 1 MiB and overflows the real one (CI's ASan run crashed so).
    @Test(.disabled(if: Reliability.runningUnderAddressSanitizer, "ASan's fake stacks hide the stack's depth"))
    func aDeepRecursionFitsTheStackItWasGiven() throws {
        try Self.withThread(.init(stackSize: 4 * 1024 * 1024)) { (thread) throws in
            let depth = try Self.onWorker(thread) { () -> Int in
                var marker = 0
                let top = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
                return Self.descend(bytes: 1024 * 1024, below: top)
            }
            #expect(depth > 100)
        }
    }

    /// Recurses until the stack is `bytes` deeper than `top`; answers the depth reached.
    @inline(never)
    static func descend(bytes: UInt, below top: UInt) -> Int {
        var marker = 0
        let here = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
        guard top - here < bytes else { return 1 }
        return 1 + descend(bytes: bytes, below: top)
    }

    // MARK: CPU affinity

    /// Pinned to one CPU (the first this process may use, CPU 0 unless the run is pinned elsewhere), the worker
    /// says so, and runs there in every pass.
    @Test func aWorkerPinnedToOneCPURunsOnlyThere() throws {
        let cpu = try #require(try ThreadCalls.currentAffinity().first)
        try Self.withThread(.init(cpuAffinity: [cpu])) { (thread) throws in
            #expect(thread.options.cpuAffinity == [cpu])
            #expect(try Self.onWorker(thread) { try ThreadCalls.currentAffinity() } == [cpu])
            let seen = Recorder<Int>()
            for _ in 0..<200 {
                thread.perform { seen.append((try? ThreadCalls.currentCPU()) ?? -1) }
                if seen.count % 20 == 0 { usleep(100) }
            }
            _ = try thread.performAndWait { 0 }
            #expect(seen.count == 200)
            #expect(Set(seen.all) == [cpu])
        }
    }

    /// By default the worker may run where its creator may.
    @Test func byDefaultTheAffinityIsInherited() throws {
        let creator = try ThreadCalls.currentAffinity()
        try Self.withThread(.init()) { (thread) throws in
            #expect(try Self.onWorker(thread) { try ThreadCalls.currentAffinity() } == creator)
        }
    }

    // MARK: Scheduling

    /// `SCHED_BATCH`, `SCHED_IDLE` (which the thread sets on itself) and an explicit `SCHED_OTHER` need no
    /// privilege.
    @Test(arguments: [
        (LoopThread.Scheduling.batch, ThreadScheduling.batchPolicy),
        (.idle, ThreadScheduling.idlePolicy), (.other, ThreadScheduling.otherPolicy),
    ])
    func theWorkerRunsUnderThePolicyItWasGiven(_ scheduling: LoopThread.Scheduling, _ policy: CInt) throws {
        try Self.withThread(.init(scheduling: scheduling)) { (thread) throws in
            let applied = try Self.onWorker(thread) { try ThreadCalls.currentScheduling() }
            #expect(applied == ThreadScheduling(policy: policy, priority: 0), "\(applied)")
            #expect(try thread.performAndWait { 6 * 7 } == 42)
        }
    }

    @Test func byDefaultThePolicyIsInherited() throws {
        let creator = try ThreadCalls.currentScheduling()
        try Self.withThread(.init()) { (thread) throws in
            #expect(try Self.onWorker(thread) { try ThreadCalls.currentScheduling() } == creator)
        }
    }

    /// A real-time policy is applied when the process may use it (root with `CAP_SYS_NICE`, as in this sandbox), and
    /// otherwise refused as `schedulingNotPermitted`: either way, never half-made.
    @Test(arguments: [LoopThread.Scheduling.fifo(priority: 1), .roundRobin(priority: 2)])
    func aRealTimePolicyIsAppliedOrRefusedAsNotPermitted(_ scheduling: LoopThread.Scheduling) throws {
        let thread: LoopThread
        do throws(LoopError) {
            thread = try LoopThread(name: "lt-realtime", options: .init(scheduling: scheduling))
        } catch {
            #expect(error.code == .schedulingNotPermitted && error.errno == EPERM, "\(error)")
            return
        }
        defer { thread.stop() }
        let applied = try Self.onWorker(thread) { try ThreadCalls.currentScheduling() }
        #expect(applied == ThreadScheduling(policy: scheduling.cPolicy, priority: CInt(scheduling.priority)))
    }

    // MARK: Invalid values

    /// Each invalid value is refused before anything is made, as `invalidArgument`, with a message naming the value
    /// and the valid range.
    @Test func invalidValuesAreInvalidArgumentNamingTheValueAndTheRange() {
        let minimum = ThreadCalls.minimumStackSize
        let lastCPU = min(ThreadCalls.configuredCPUCount, ThreadCalls.cpuSetCapacity) - 1
        let cases: [(LoopThread.Options, [String])] = [
            (.init(stackSize: 1), ["stack size 1 bytes", "\(minimum)..."]),
            (.init(stackSize: -4096), ["stack size -4096 bytes", "\(minimum)..."]),
            (.init(stackSize: .max), ["stack size \(Int.max) bytes", "\(minimum)..."]),
            (.init(cpuAffinity: []), ["affinity is empty", "0...\(lastCPU)"]),
            (.init(cpuAffinity: [0, 100_000]), ["CPU 100000", "0...\(lastCPU)"]),
            (.init(cpuAffinity: [-1]), ["CPU -1", "0...\(lastCPU)"]),
            (.init(scheduling: .fifo(priority: 0)), ["SCHED_FIFO priority 0", "1...99"]),
            (.init(scheduling: .fifo(priority: 100)), ["SCHED_FIFO priority 100", "1...99"]),
            (.init(scheduling: .roundRobin(priority: -5)), ["SCHED_RR priority -5", "1...99"]),
        ]
        for (options, fragments) in cases {
            do throws(LoopError) {
                let thread = try LoopThread(name: "lt-invalid", options: options)
                thread.stop()
                Issue.record("\(options) was accepted")
            } catch {
                #expect(error.code == .invalidArgument, "\(options): \(error)")
                for fragment in fragments {
                    #expect(error.message.contains(fragment), "\(options): \(error.message) lacks \(fragment)")
                }
            }
        }
    }

    @Test func optionsDescribeWhatIsSet() {
        #expect(LoopThread.Options().description == "defaults")
        let options = LoopThread.Options(stackSize: 65536, cpuAffinity: [1, 0], scheduling: .fifo(priority: 3))
        #expect(options.description == "stack 65536 bytes, CPUs [0, 1], SCHED_FIFO priority 3")
        #expect(LoopThread.Scheduling.idle.description == "SCHED_IDLE")
        #expect(LoopThread.Scheduling.roundRobin(priority: 7) != .fifo(priority: 7))
    }

    // MARK: Refusals leave nothing half-made

    /// A refusal of the kernel, scripted (this sandbox runs as root, so a real `EPERM` cannot be had): at
    /// `pthread_create` (`EPERM` for a policy, `EINVAL` for options, `EAGAIN`), at an attribute, or at the
    /// worker's own `sched_setscheduler` (`SCHED_BATCH`, `SCHED_IDLE`). Each is its typed error, and afterwards the
    /// process has the threads, loops and descriptors it had before. Scripts are process-wide: a child process.
    @Test func aRefusedThreadIsATypedErrorAndLeavesNothingBehind() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let cases: [(FaultInjection.Fault, LoopThread.Options, LoopError.Code)] = [
                (.init("pthread_create", EPERM), .init(scheduling: .fifo(priority: 10)), .schedulingNotPermitted),
                (.init("pthread_create", EPERM), .init(scheduling: .roundRobin(priority: 1)), .schedulingNotPermitted),
                (.init("pthread_create", EINVAL), .init(cpuAffinity: [0]), .invalidArgument),
                (.init("pthread_create", EAGAIN), .init(stackSize: 1 << 20), .systemCallFailed),
                (.init("pthread_create", EPERM), .init(stackSize: 1 << 20), .systemCallFailed),
                (.init("pthread_create", EPERM), .init(), .systemCallFailed),
                (.init("pthread_attr_setstacksize", EINVAL), .init(stackSize: 1 << 20), .invalidArgument),
                (.init("pthread_attr_setaffinity_np", EINVAL), .init(cpuAffinity: [0]), .invalidArgument),
                (.init("pthread_attr_setschedparam", EINVAL), .init(scheduling: .fifo(priority: 5)), .invalidArgument),
                (.init("sched_setscheduler", EPERM), .init(scheduling: .batch), .schedulingNotPermitted),
                (.init("sched_setscheduler", EINVAL), .init(scheduling: .idle), .invalidArgument),
                (.init("sched_setscheduler", ENOMEM), .init(scheduling: .idle), .systemCallFailed),
            ]
            var problems: [String] = []
            // A first thread, so the runtime's one-time setup (the loop registry's key, ...) is not counted.
            try? LoopThread(name: "lt-warm-up").stop()
            for (fault, options, expected) in cases {
                let threads = Reliability.threadCount()
                let loops = Loop.aliveCount
                let descriptors = FaultInjection.openDescriptors
                let (code, failures) = FaultInjection.with([fault]) { () -> LoopError.Code? in
                    do throws(LoopError) {
                        try LoopThread(name: "lt-refused", options: options).stop()
                        return nil
                    } catch {
                        return error.errno == fault.errno ? error.code : nil
                    }
                }
                let clean = waitUntil(timeout: .seconds(5)) {
                    Reliability.threadCount() == threads && Loop.aliveCount == loops
                        && FaultInjection.openDescriptors == descriptors
                }
                if code != expected || failures != [1] || !clean {
                    problems.append(
                        "\(fault) with \(options): \(code.map { "\($0)" } ?? "no error"), failures \(failures), "
                            + "threads \(threads) -> \(Reliability.threadCount()), loops \(loops) -> "
                            + "\(Loop.aliveCount), descriptors \(descriptors.count) -> "
                            + "\(FaultInjection.openDescriptors.count)")
                }
            }
            // And the next thread starts normally.
            let answer = (try? LoopThread(name: "lt-after", options: .init(scheduling: .batch)))
                .flatMap { thread in
                    defer { thread.stop() }
                    return try? thread.performAndWait { 42 }
                }
            print("verdict: \(problems.count) problems, then \(answer.map(String.init) ?? "none")")
            for problem in problems { print(problem) }
            exit(0)
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        #expect(output.contains("verdict: 0 problems, then 42"), "\(output)")
    }
}
