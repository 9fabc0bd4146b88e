import Glibc
import Synchronization
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
            let source = LoopSource { performs.increment() }
            self.source = source
            running = ItemsSupport.startRunningLoop { loop in
                try! loop.add(source)
                try! loop.add(LoopObserver(activities: .afterWaiting) { _ in wakeUps.increment() })
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
            try parent.running.loop.add(LoopSource {})
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
                let pid = fork()
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
            let pid = fork()
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

/// Every descriptor RunLoopKit opens is close-on-exec: a program started after loops exist inherits none.
@Suite struct CloseOnExecTests {
    @Test func loopDescriptorsAreNotInheritedByExec() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let loops = (0..<3).map { _ in ItemsSupport.startRunningLoop() }
            let pipe = Pipe()
            let watched = try! FileDescriptorSource(descriptor: pipe.readEnd) { _ in }
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
