import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// After `fork()` the child must not use the parent's loops (their epoll set, eventfd and timerfd are the
/// parent's kernel objects): it gets fresh loops, and the parent's loops cannot wake the parent or be run.
/// Each scenario runs in an exit-test child process, which then forks: fewer threads hold runtime locks there.
@Suite(
    .disabled(
        if: Reliability.runningUnderThreadSanitizer, "fork() from a multi-threaded process is unsupported under TSan")
)
struct ForkTests {
    /// The parent side: a loop thread asleep in `epoll_wait` that counts its wake-ups and performs.
    struct SleepingParent {
        let running: ItemsSupport.RunningLoop
        let source: LoopSource
        let wakeUps = Counter()
        let performs = Counter()

        init() {
            let wakeUps = self.wakeUps
            let performs = self.performs
            let source = LoopSource { _ in performs.increment() }
            self.source = source
            running = ItemsSupport.startRunningLoop { loop in
                try! loop.add(source)
                try! loop.add(LoopObserver(activities: .afterWaiting) { _, _ in wakeUps.increment() })
            }
            _ = waitUntil { running.loop.isWaiting }
        }
    }

    /// The child: fresh loops that work; the parent's loops neither wake nor accept items. Answers a failure code.
    static func childChecks(parent: SleepingParent, forkersLoop: Loop) -> Int32 {
        let fresh = Loop.current
        if fresh === forkersLoop || fresh === parent.running.loop { return 10 }
        if !fresh.isCurrent || forkersLoop.isCurrent { return 11 }
        // The child's only thread is its main thread (its thread id is the child's process id).
        if Loop.main !== fresh || !fresh.isMain { return 12 }
        let fired = ReliabilityFlag()
        try! fresh.add(try! LoopTimer(after: .milliseconds(10)) { _ in fired.set() })
        if fresh.run(in: .default, for: .seconds(5)) != .finished || !fired.isSet { return 13 }
        parent.source.signal()
        parent.running.loop.wakeUp()
        parent.running.loop.stop()
        parent.running.loop.perform {}
        do throws(LoopError) {
            try parent.running.loop.add(LoopSource { _ in })
            return 14
        } catch {
            if error.code != .loopTerminated { return 15 }
        }
        return 0
    }

    @Test func theChildGetsFreshLoopsAndCannotWakeTheParents() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let parent = SleepingParent()
            let outcome = Box<Int32>()
            let forker = TestThread {
                let forkersLoop = Loop.current
                try! forkersLoop.add(ItemsSupport.keepAlive())
                let wakeUpsBefore = parent.wakeUps.current
                let pid = Reliability.forkWhenOtherThreadsSleep()
                if pid == 0 { _exit(ForkTests.childChecks(parent: parent, forkersLoop: forkersLoop)) }
                let status = Reliability.waitForChild(pid)
                // Give a wrongly woken parent loop time to show it (a bounded wait for a condition that must
                // stay false).
                let woken = waitUntil(timeout: .milliseconds(200)) { parent.wakeUps.current != wakeUpsBefore }
                let stillAsleep = parent.running.loop.isWaiting && !woken && parent.performs.current == 0
                outcome.value = status == 0 && stillAsleep ? 0 : 100 + (status ?? 99)
                print(
                    "[reliability] fork: child exit status \(status.map { "\($0)" } ?? "killed"), "
                        + "parent loop woken: \(woken), performs: \(parent.performs.current)")
                forkersLoop.run(in: .default, for: .zero)  // The parent's own loops are unaffected.
            }
            forker.join()
            parent.running.finish()
            print(outcome.value == 0 ? "verdict: ok" : "verdict: FAILED \(outcome.value!)")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }

    /// Running a loop created before `fork()` in the child traps, naming the reason.
    @Test func runningAParentsLoopInTheChildTraps() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let loop = Loop.current
            try! loop.add(ItemsSupport.keepAlive())
            var descriptors: [CInt] = [0, 0]
            precondition(pipe(&descriptors) == 0)
            let pid = Reliability.forkWhenOtherThreadsSleep()
            if pid == 0 {
                dup2(descriptors[1], 2)
                loop.run(in: .default, for: .zero)
                _exit(0)
            }
            close(descriptors[1])
            let status = Reliability.waitForChild(pid)
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptors[0], &buffer, buffer.count)
                if count <= 0 { break }
                bytes += buffer[0..<count]
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let trapped = (status ?? 0) < 0 && text.contains("loop created before fork()")
            print("[reliability] fork trap: child status \(status.map { "\($0)" } ?? "killed")")
            print(trapped ? "verdict: ok" : "verdict: FAILED \(text.prefix(400))")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }
}

/// Every object made before `fork()` answers consistently in the child: work is refused (`false`, or a thrown
/// `threadStopped` / `loopTerminated`), never accepted and lost, and nothing hangs or touches the parent's kernel
/// objects. Each scenario forks from an exit-test child process (see ``ForkTests``), and each check runs in the
/// fork's child under ``ForkedChecks``, whose deadline turns a hang into a failure naming the check.
@Suite(
    .disabled(
        if: Reliability.runningUnderThreadSanitizer, "fork() from a multi-threaded process is unsupported under TSan")
)
struct ForkConsistencyTests {
    /// Every post to a parent's loop is refused in the child, whether that loop sleeps in the parent (its copy says
    /// it waits) or is idle (the forking thread's own loop, not waiting: the case no wake-up path ever sees), and the
    /// parent's loops are untouched.
    @Test func aParentsLoopRefusesEveryPostInTheChild() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let parent = ForkTests.SleepingParent()
            let idle = Loop.current  // The forking thread's loop: neither running nor waiting.
            try! idle.add(ItemsSupport.keepAlive())
            var checks: [ForkedChecks.Check] = []
            for (name, loop) in [("sleeping", parent.running.loop), ("idle", idle)] {
                checks += ForkConsistencyTests.postChecks(name, loop, helpers: try! Helpers(loop))
            }
            // The items and helpers added from this thread reached the sleeping loop (a block runs after the
            // changes sent before it), and it sleeps again: from now on only the child could wake it.
            let settled = ReliabilityFlag()
            parent.running.loop.perform { settled.set() }
            _ = waitUntil { settled.isSet && parent.running.loop.isWaiting }
            let wakeUpsBefore = parent.wakeUps.current
            let verdict = await ForkedChecks.run(checks)
            let woken = waitUntil(timeout: .milliseconds(200)) { parent.wakeUps.current != wakeUpsBefore }
            // The parent's loops still take work: the child's refusals were the child's alone.
            let ran = ReliabilityFlag()
            let parentAccepts = !parent.running.loop.isTerminated && parent.running.loop.perform { ran.set() }
            let parentRan = parentAccepts && waitUntil { ran.isSet }
            let idleAccepts = !idle.isTerminated && idle.perform {}
            parent.running.finish()
            let ok = verdict == nil && !woken && parentRan && idleAccepts
            print(
                ok
                    ? "verdict: ok"
                    : "verdict: FAILED \(verdict ?? "child ok"), parent woken: \(woken), ran: \(parentRan), "
                        + "idle accepts: \(idleAccepts)")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }

    /// The helpers that queue work to a loop, made in the parent.
    struct Helpers {
        let queue: PassWorkQueue
        let committer: CommitBeforeSleep<Int>
        let scheduler: PhaseTaskScheduler

        init(_ loop: Loop) throws {
            queue = try PassWorkQueue(loop: loop)
            committer = try CommitBeforeSleep<Int>(loop: loop) { _ in }
            scheduler = try PhaseTaskScheduler(loop: loop)
        }
    }

    /// What the child checks on a parent's `loop`.
    static func postChecks(_ name: String, _ loop: Loop, helpers: Helpers) -> [ForkedChecks.Check] {
        let source = LoopSource { _ in }
        let timer = ItemsSupport.keepAlive()
        try! loop.add(source)
        try! loop.add(timer)
        let callback = try! loop.schedule(after: .seconds(3600)) {}
        return [
            ("\(name): isTerminated", { loop.isTerminated ? nil : "answered false" }),
            ("\(name): perform", { refused(loop.perform {}) }),
            ("\(name): perform(in: .default)", { refused(loop.perform(in: .default) {}) }),
            ("\(name): perform(in: .common)", { refused(loop.perform(in: .common) {}) }),
            ("\(name): perform(in: named)", { refused(loop.perform(in: "fork.named") {}) }),
            ("\(name): perform(in: [modes])", { refused(loop.perform(in: [.default, "fork.list"]) {}) }),
            ("\(name): perform(with:)", { refused(loop.perform(with: 1) { _ in }) }),
            ("\(name): perform(in:with:)", { refused(loop.perform(in: .common, with: 1) { _ in }) }),
            ("\(name): still isTerminated", { loop.isTerminated ? nil : "answered false after the posts" }),
            (
                "\(name): schedule",
                {
                    do throws(LoopError) {
                        try loop.schedule(after: .zero) {}
                        return "accepted"
                    } catch {
                        return error.code == .loopTerminated && error.message.contains("fork()")
                            ? nil : "threw \(error)"
                    }
                }
            ),
            (
                "\(name): add",
                {
                    do throws(LoopError) {
                        try loop.add(LoopSource { _ in })
                        return "accepted"
                    } catch {
                        return error.code == .loopTerminated && error.message.contains("fork()")
                            ? nil : "threw \(error)"
                    }
                }
            ),
            // Changes sent to a loop no thread runs: dropped, without waiting for the loop's locks.
            (
                "\(name): cancel, remove, invalidate, re-arm",
                {
                    loop.cancel(callback)
                    loop.remove(source)
                    timer.setNextFireTime(.now)
                    source.invalidate()
                    loop.addCommonMode("fork.common")
                    return nil
                }
            ),
            ("\(name): PassWorkQueue.enqueue", { refused(helpers.queue.enqueue {}) }),
            ("\(name): CommitBeforeSleep.mark", { refused(helpers.committer.mark(1)) }),
            ("\(name): PhaseTaskScheduler.schedule", { refused(helpers.scheduler.schedule(at: .currentPassEnds) {}) }),
        ]
    }

    static func refused(_ accepted: Bool) -> String? {
        accepted ? "accepted (answered true): the work would never run" : nil
    }

    /// A `LoopThread` made before the fork is stopped in the child: its posts answer `false`, its waits throw
    /// `threadStopped` instead of blocking, and `stop()` and the release of its last reference return instead of
    /// joining a thread the child does not have. The parent's thread keeps working.
    @Test func aParentsLoopThreadIsStoppedInTheChild() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let thread = try! LoopThread(name: "fork.thread")
            let released = Box<LoopThread>(try! LoopThread(name: "fork.released"))
            let releasedWorker = released.value!.worker
            let verdict = await ForkedChecks.run([
                ("isStopped", { thread.isStopped ? nil : "answered false" }),
                ("loop.isTerminated", { thread.loop.isTerminated ? nil : "answered false" }),
                ("perform", { ForkConsistencyTests.refused(thread.perform {}) }),
                ("perform(in: mode)", { ForkConsistencyTests.refused(thread.perform(in: .default) {}) }),
                ("perform(in: [modes])", { ForkConsistencyTests.refused(thread.perform(in: [.default, "x"]) {}) }),
                ("perform(with:)", { ForkConsistencyTests.refused(thread.perform(with: 1) { _ in }) }),
                ("performAndWait", { ForkConsistencyTests.stopped { try thread.performAndWait { 1 } } }),
                (
                    "performAndWait(in: [modes])",
                    { ForkConsistencyTests.stopped { try thread.performAndWait(in: [.default]) { 1 } } }
                ),
                // glibc marks the parent's other threads dead in the child, so a join there may return at once
                // rather than hang; but the descriptor it would free is recycled (a thread the child starts may
                // have it), so neither stop() nor the deinit may join, nor signal the parent's loop.
                (
                    "stop",
                    {
                        thread.stop()
                        if thread.handle.withLock({ $0.released }) { return "joined a thread the child does not have" }
                        return thread.isStopped ? nil : "not stopped after stop()"
                    }
                ),
                (
                    "release",
                    {
                        released.value = nil  // The last reference: its deinit runs here.
                        return releasedWorker.isStopping
                            ? "the deinit ran the stop (and join) of the parent's thread" : nil
                    }
                ),
                (
                    "the child's own LoopThread",
                    {
                        guard let own = try? LoopThread(name: "fork.child") else { return "could not start" }
                        defer { own.stop() }
                        return (try? own.performAndWait { 5 }) == 5 ? nil : "did not run a block"
                    }
                ),
            ])
            let parentWorks = (try? thread.performAndWait { 7 }) == 7 && !thread.isStopped
            thread.stop()
            released.value?.stop()
            let ok = verdict == nil && parentWorks
            print(
                ok ? "verdict: ok" : "verdict: FAILED \(verdict ?? "child ok"), parent's thread works: \(parentWorks)")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }

    /// Nil if `call` threw `threadStopped`, else what it did.
    static func stopped(_ call: () throws -> Int) -> String? {
        do {
            _ = try call()
            return "ran"
        } catch let error as LoopError where error.code == .threadStopped {
            return nil
        } catch {
            return "threw \(error)"
        }
    }

    /// Awaiting work on a parent's `LoopThread` or loop in the child throws at once instead of suspending for good.
    @Test func awaitingWorkOnAParentsLoopThreadThrowsInTheChild() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let thread = try! LoopThread(name: "fork.async")
            let verdict = await ForkedChecks.run([
                ("run", { await ForkConsistencyTests.thrown(.threadStopped) { try await thread.run { 1 } } }),
                (
                    "run(in: [modes])",
                    { await ForkConsistencyTests.thrown(.threadStopped) { try await thread.run(in: [.default]) { 1 } } }
                ),
                (
                    "loop.run",
                    { await ForkConsistencyTests.thrown(.loopTerminated) { try await thread.loop.run { 1 } } }
                ),
            ])
            let parentWorks = (try? await thread.run { 7 }) == 7
            thread.stop()
            print(
                verdict == nil && parentWorks
                    ? "verdict: ok" : "verdict: FAILED \(verdict ?? "child ok"), parent's thread works: \(parentWorks)")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }

    /// Nil if `call` threw a ``LoopError`` with `code`, else what it did.
    static func thrown(_ code: LoopError.Code, _ call: () async throws -> Int) async -> String? {
        do {
            _ = try await call()
            return "ran"
        } catch let error as LoopError where error.code == code {
            return nil
        } catch {
            return "threw \(error)"
        }
    }

    /// An actor on a parent's `LoopThread`.
    actor OnParentsLoop {
        let thread: LoopThread
        init(_ thread: LoopThread) { self.thread = thread }
        nonisolated var unownedExecutor: UnownedSerialExecutor { thread.loop.asUnownedSerialExecutor() }
        func ping() -> Int { 1 }
    }

    /// A job for a parent's loop in the child traps, as a job for a loop whose thread exited does, naming fork():
    /// it can never run on the actor's thread (it used to be queued and lost, the task suspended for good).
    @Test func anActorJobForAParentsLoopTrapsInTheChild() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let thread = try! LoopThread(name: "fork.actor")
            let actor = OnParentsLoop(thread)
            let parentWorks = await actor.ping() == 1
            var descriptors: [CInt] = [0, 0]
            precondition(pipe(&descriptors) == 0)
            let pid = Reliability.forkWhenOtherThreadsSleep()
            if pid == 0 {
                dup2(descriptors[1], 2)
                _ = await actor.ping()
                _exit(0)
            }
            close(descriptors[1])
            let status = Reliability.waitForChild(pid)
            let text = ForkedChecks.readAll(descriptors[0])
            let trapped = (status ?? 0) < 0 && text.contains("an actor job was enqueued") && text.contains("fork()")
            let parentStillWorks = await actor.ping() == 1
            thread.stop()
            print(
                trapped && parentWorks && parentStillWorks
                    ? "verdict: ok"
                    : "verdict: FAILED child status \(status.map { "\($0)" } ?? "killed at the deadline"): "
                        + "\(text.prefix(400))")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }

    /// Invalidating a descriptor source of a parent's loop in the child leaves the parent's epoll set alone: the
    /// set is the parent's own (shared through the inherited descriptor), and removing the descriptor from it would
    /// silence the parent's source for good.
    @Test func invalidatingAParentsDescriptorSourceInTheChildLeavesTheParentWatching() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let pipe = Pipe()
            let reports = Counter()
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                reports.increment()
                pipe.drain()
            }
            let running = ItemsSupport.startRunningLoop { loop in try! loop.add(source) }
            _ = waitUntil { running.loop.isWaiting }
            let verdict = await ForkedChecks.run([
                (
                    "invalidate",
                    {
                        source.invalidate()
                        return source.isValid ? "still valid" : nil
                    }
                )
            ])
            pipe.write()
            let reported = waitUntil { reports.current > 0 }
            source.invalidate()
            running.finish()
            print(
                verdict == nil && reported
                    ? "verdict: ok" : "verdict: FAILED \(verdict ?? "child ok"), parent's source reported: \(reported)")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }
}

/// Runs checks in the child of a `fork()`, one after another, and tells the parent which failed, or at which one the
/// child hung: the child records the check it is at in a page shared with the parent, and the parent's wait for it
/// has a deadline (``Reliability/waitForChild(_:timeout:)`` kills it then). The checks pass only if the child got
/// through all of them.
enum ForkedChecks {
    /// A check's name, and the check: `nil` when it passed, else what went wrong.
    typealias Check = (name: String, run: () async -> String?)

    /// Forks; the child runs `checks` and exits. Answers `nil` when every check passed, else what failed.
    static func run(_ checks: [Check]) async -> String? {
        let page = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)!
        precondition(page != MAP_FAILED)
        defer { munmap(page, 4096) }
        let step = page.bindMemory(to: Int32.self, capacity: 1)
        step.pointee = -1
        var descriptors: [CInt] = [0, 0]
        precondition(pipe(&descriptors) == 0)
        let pid = Reliability.forkWhenOtherThreadsSleep()
        if pid == 0 {
            var failures = ""
            for (index, check) in checks.enumerated() {
                step.pointee = Int32(index)
                if let failure = await check.run() { failures += "\(check.name): \(failure); " }
            }
            step.pointee = Int32(checks.count)
            _ = failures.utf8CString.withUnsafeBufferPointer { write(descriptors[1], $0.baseAddress, $0.count - 1) }
            _exit(failures.isEmpty ? 0 : 1)
        }
        close(descriptors[1])
        let status = Reliability.waitForChild(pid)
        let failures = readAll(descriptors[0])
        let reached = Int(step.pointee)
        // A check that suspends the child's task for good does not always hang the child: its thread goes back to
        // the cooperative pool, and the process may end when that idle thread exits. Only reaching the end counts.
        guard reached == checks.count else {
            let name = checks.indices.contains(reached) ? checks[reached].name : "before the first check"
            let end = status.map { "exit status \($0)" } ?? "killed at the deadline"
            return "the child never finished \(name) (\(end))"
        }
        return status == 0 ? nil : "child exit status \(status.map { "\($0)" } ?? "killed"): \(failures)"
    }

    /// Everything `descriptor` yields until end of file; closes it.
    static func readAll(_ descriptor: CInt) -> String {
        defer { close(descriptor) }
        return String(decoding: readToEnd(descriptor), as: UTF8.self)
    }
}

/// Every descriptor RunLoopKit opens is close-on-exec: a program started after loops exist inherits none.
@Suite struct CloseOnExecTests {
    @Test func loopDescriptorsAreNotInheritedByExec() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let loops = (0..<3).map { _ in ItemsSupport.startRunningLoop() }
            let pipe = Pipe()
            let watched = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            try! Loop.current.add(watched)
            // The loops' own descriptors, read from their pollers (the process also holds the Swift runtime's).
            let pollers = loops.map(\.loop.poller) + [Loop.current.poller]
            let created = Set(pollers.flatMap { [$0.epoll, $0.wakeUpDescriptor, $0.timerDescriptor] })
            let flagged = created.allSatisfy { fcntl($0, F_GETFD) & FD_CLOEXEC != 0 }
            let listing = Reliability.shellOutput("ls /proc/$$/fd")
            let inherited = Set(listing.split(whereSeparator: \.isWhitespace).compactMap { CInt($0) })
            let leaked = created.intersection(inherited)
            print("[reliability] exec: \(created.count) loop descriptors, inherited by /bin/sh: \(leaked.sorted())")
            let ok = created.count == 12 && flagged && leaked.isEmpty && !inherited.isEmpty
            watched.invalidate()
            for loop in loops { loop.finish() }
            print(ok ? "verdict: ok" : "verdict: FAILED (flagged \(flagged), listing \(listing))")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }
}
