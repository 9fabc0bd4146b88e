import Glibc
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Many short-lived loop threads, and threads that exit while others signal, stop, wake and post to their loops.
@Suite struct ThreadChurnTests {
    /// One thread's life: a loop with one of each item (the descriptor source on its own pipe), a short run, exit.
    static func shortLivedLoopThread() -> TestThread {
        TestThread {
            let loop = Loop.current
            let pipe = Pipe()
            let fired = Counter()
            let source = LoopSource { _ in fired.increment() }
            let descriptorSource = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                pipe.drain()
                fired.increment()
            }
            try! loop.add(source)
            try! loop.add(try! LoopTimer(after: .microseconds(100)) { _ in fired.increment() })
            try! loop.add(LoopObserver(activities: .all) { _, _ in })
            try! loop.add(descriptorSource)
            source.signal()
            pipe.write()
            ItemsSupport.run(loop, timeout: .seconds(10)) { fired.current >= 3 }
            descriptorSource.invalidate()
            pipe.close()
        }
    }

    /// 1,000 threads in batches: afterwards the process has as many descriptors and threads as before. Run in a
    /// child process (an exit test), so tests running in parallel cannot disturb the counts.
    ///
    /// Even in the child the Swift runtime is not idle: its Dispatch worker threads retire after a while and its
    /// epoll manager opens a timerfd the first time it arms a timer, either of which can land inside a measurement,
    /// rarely and once. So the measurement is repeated, at most three times, until one finds the counts exactly as
    /// before. A real leak cannot pass that way: it leaves threads or descriptors behind in every attempt.
    @Test func aThousandLoopThreadsLeaveNoDescriptorOrThreadBehind() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let threads = Reliability.size(1_000, soak: 10_000)
            // Warm up: the first loop creates process-wide state (the thread-specific key, the fork handler).
            ThreadChurnTests.shortLivedLoopThread().join()
            for attempt in 1...3 where ThreadChurnTests.churn(threads: threads, attempt: attempt) {
                print("verdict: ok")
                exit(0)
            }
            print("verdict: FAILED, threads or descriptors left behind in each of the three attempts")
            exit(0)
        }
        let output = TestFigures.childOutput(result)
        #expect(output.contains("verdict: ok"), "\(output)")
    }

    /// Runs `threads` short-lived loop threads in batches of 50; answers whether descriptors and threads came back.
    /// Runs in the exit test's child, whose standard output the runner captures: the figures are printed there.
    static func churn(threads: Int, attempt: Int) -> Bool {
        let descriptorsBefore = Reliability.openDescriptors()
        let threadsBefore = Reliability.threadCount()
        let start = Loop.Instant.now
        for _ in 0..<(threads / 50) {
            let batch = (0..<50).map { _ in ThreadChurnTests.shortLivedLoopThread() }
            for thread in batch { thread.join() }
        }
        let elapsed = Loop.Instant.now - start
        // Joined threads are gone from /proc/self/task once the kernel reaps them: wait for it, with a limit.
        let exact = waitUntil(timeout: .seconds(10)) {
            Reliability.threadCount() == threadsBefore && Reliability.openDescriptors() == descriptorsBefore
        }
        let descriptorsAfter = Reliability.openDescriptors()
        print(
            "[reliability] thread churn (attempt \(attempt)): \(threads) loop threads, descriptors "
                + "\(descriptorsBefore.count) -> \(descriptorsAfter.count) (opened \(descriptorsAfter.subtracting(descriptorsBefore).sorted())), "
                + "threads \(threadsBefore) -> \(Reliability.threadCount()), \(elapsed)")
        return exact
    }

    /// Threads exit while other threads signal their sources, stop and wake their loops, post blocks and add
    /// items: nothing crashes, posting to a finished loop answers false and adding throws `loopTerminated`.
    @Test func signalsAndStopsRacingWithThreadExit() {
        let rounds = Reliability.size(1_000, soak: 20_000)
        let refusedPosts = Counter()
        let terminatedAdds = Counter()
        let otherErrors = Counter()
        for _ in 0..<(rounds / 10) {
            let loops = Locked<[(Loop, LoopSource)]>([])
            let owners = (0..<10).map { index in
                TestThread {
                    let loop = Loop.current
                    let source = LoopSource { _ in }
                    try! loop.add(source)
                    loops.withLock { $0.append((loop, source)) }
                    loop.run(in: .default, for: .microseconds(Int64(index * 100)))
                }
            }
            _ = waitUntil { loops.withLock { $0.count } == 10 }
            let targets = loops.withLock { $0 }
            let racers = (0..<2).map { _ in
                TestThread {
                    for _ in 0..<20 {
                        for (loop, source) in targets {
                            source.signal()
                            loop.wakeUp()
                            loop.stop()
                            if !loop.perform({}) { refusedPosts.increment() }
                            do throws(LoopError) {
                                try loop.add(LoopSource { _ in })
                            } catch let error where error.code == .loopTerminated {
                                terminatedAdds.increment()
                            } catch {
                                otherErrors.increment()
                            }
                        }
                    }
                }
            }
            for thread in owners + racers { thread.join() }
            for (loop, source) in targets {
                let accepted = loop.perform {}
                #expect(!accepted)
                source.signal()
                loop.wakeUp()
                loop.stop()
            }
        }
        #expect(otherErrors.current == 0)
        Reliability.report(
            "thread exit races: \(rounds) loop threads, \(refusedPosts.current) posts refused and "
                + "\(terminatedAdds.current) adds refused after exit")
    }
}
