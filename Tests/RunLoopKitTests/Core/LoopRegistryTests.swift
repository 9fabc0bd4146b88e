import Glibc
import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// The thread-keyed registry: `Loop.current`, `Loop.main`, and tearing a thread's loop down when the thread exits.
///
/// Serialized because one test counts the process's open descriptors.
@Suite(.serialized) struct LoopRegistryTests {
    // MARK: Getting loops

    @Test func currentIsTheSameObjectEveryTimeOnOneThread() {
        let answers = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            answers.append(Loop.current === loop)
            answers.append(Loop.current === Loop.current)
            answers.append(loop.isCurrent)
            answers.append(loop.isMain)
        }
        #expect(answers.all == [true, true, true, false])
    }

    @Test func differentThreadsGetDifferentLoops() {
        let first = Box<Loop>()
        let second = Box<Loop>()
        let bothKnown = ItemsSupport.Flag()
        let threads = [first, second].map { box in
            TestThread {
                box.value = Loop.current
                // Both threads are alive at once, so neither loop can be the other's recycled object.
                _ = waitUntil { bothKnown.isSet }
            }
        }
        #expect(waitUntil { first.value != nil && second.value != nil })
        bothKnown.set()
        threads.forEach { $0.join() }
        let a = first.value!
        let b = second.value!
        #expect(a !== b)
        #expect(!a.isCurrent && !b.isCurrent)  // Neither is the test thread's loop.
    }

    @Test func mainIsOneObjectFromEveryThreadAndIsMain() {
        let seen = Recorder<ObjectIdentifier>()
        let ownIsMain = Recorder<Bool>()
        let threads = (0..<3).map { _ in
            TestThread {
                seen.append(ObjectIdentifier(Loop.main))
                ownIsMain.append(Loop.current.isMain || Loop.current === Loop.main)
            }
        }
        threads.forEach { $0.join() }
        #expect(Set(seen.all) == [ObjectIdentifier(Loop.main)])
        #expect(seen.count == 3)
        #expect(Loop.main.isMain)
        #expect(ownIsMain.all == [false, false, false])
    }

    // MARK: Thread exit

    @Test func loopsOfAThousandExitedThreadsLeaveNoDescriptorOpen() {
        let before = openDescriptorCount()
        let created = Counter()
        for _ in 0..<20 {
            let batch = (0..<50).map { _ in
                TestThread {
                    let loop = Loop.current
                    if loop.isCurrent { created.increment() }
                }
            }
            batch.forEach { $0.join() }
        }
        #expect(created.current == 1000)
        // A leak would be three descriptors per thread (3,000); the slack covers tests running in parallel.
        #expect(waitUntil { openDescriptorCount() <= before + 100 })
        let after = openDescriptorCount()
        #expect(after <= before + 100, "descriptors before \(before), after \(after)")
    }

    @Test func aThreadThatReusesADeadThreadsPthreadTGetsAFreshLoop() {
        /// One finished thread: its `pthread_t` and its loop (kept alive here, so no new loop can reuse the
        /// object's address).
        struct Dead: Sendable {
            let thread: pthread_t
            let loop: Loop
            let timer: LoopTimer
        }
        let dead = Locked<[Dead]>([])
        let problems = Recorder<String>()
        let reuses = Counter()
        // glibc reuses a joined thread's stack, and with it the `pthread_t` value, for the next thread.
        for _ in 0..<500 where reuses.current < 20 {
            let thread = TestThread {
                let me = pthread_self()
                let earlier = dead.withLock { $0.filter { pthread_equal($0.thread, me) != 0 } }
                if !earlier.isEmpty { reuses.increment() }
                let loop = Loop.current
                for old in earlier {
                    if old.loop === loop { problems.append("a new thread got the dead thread's loop") }
                    if old.loop.isCurrent { problems.append("the dead thread's loop says it is current") }
                    if loop.contains(old.timer) { problems.append("the new loop holds the dead loop's timer") }
                }
                let timer = try! LoopTimer(after: .seconds(3600)) { _ in }
                try! loop.add(timer)
                dead.withLock { $0.append(Dead(thread: me, loop: loop, timer: timer)) }
            }
            thread.join()
        }
        #expect(problems.all.isEmpty, "\(problems.all.prefix(5))")
        #expect(reuses.current > 0, "no pthread_t was reused, so nothing was tested")
        // A dead thread's loop refuses items however its pthread_t was reused.
        let last = dead.withLock { $0.last }
        #expect(throws: LoopError.self) { try last?.loop.add(LoopSource { _ in }) }
    }

    @Test func sourcesGetTheirCancelHandlerOnTheExitingThread() {
        let exitingThread = Box<pthread_t>()
        let cancels = Recorder<String>()
        let cancelThreads = Recorder<pthread_t>()
        let source = LoopSource(
            cancel: { _, mode in
                cancels.append(mode.name)
                cancelThreads.append(pthread_self())
            },
            perform: { _ in }
        )
        let (_, thread) = startLoopThread { loop in
            exitingThread.value = pthread_self()
            try! loop.add(source)
            try! loop.add(source, to: "other")
            loop.run(in: .default, for: .zero)
        }
        thread.join()
        #expect(cancels.all.sorted() == ["default", "other"])
        #expect(cancelThreads.count == 2)
        #expect(cancelThreads.all.allSatisfy { pthread_equal($0, exitingThread.value!) != 0 })
    }

    @Test func aTornDownLoopRefusesItemsAndBlocks() throws {
        let (loop, thread) = startLoopThread { _ in }
        thread.join()

        var codes: [LoopError.Code] = []
        do { try loop.add(LoopSource { _ in }) } catch { codes.append(error.code) }
        do { try loop.add(try LoopTimer(after: .seconds(1)) { _ in }) } catch { codes.append(error.code) }
        do { try loop.add(LoopObserver(activities: .all) { _, _ in }) } catch { codes.append(error.code) }
        let pipe = Pipe()
        defer { pipe.close() }
        let descriptorSource = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
        do { try loop.add(descriptorSource, to: "other") } catch { codes.append(error.code) }
        #expect(codes == [.loopTerminated, .loopTerminated, .loopTerminated, .loopTerminated])

        let ran = ItemsSupport.Flag()
        #expect(loop.perform { ran.set() } == false)
        #expect(loop.perform(in: [.default, "other"]) { ran.set() } == false)
        #expect(!ran.isSet)
    }

    @Test func anItemRefusedByATornDownLoopStaysFreeForALiveOne() {
        let (deadLoop, thread) = startLoopThread { _ in }
        thread.join()
        let source = LoopSource { _ in }
        #expect(throws: LoopError.self) { try deadLoop.add(source) }

        let added = Box<Bool>()
        ItemsSupport.onLoopThread { loop in
            do {
                try loop.add(source)
                added.value = loop.contains(source)
            } catch {
                added.value = false
            }
        }
        #expect(added.value == true)
    }

    @Test func aTornDownLoopRefusesBlocks() {
        let (loop, thread) = startLoopThread { _ in }
        thread.join()
        let ran = ItemsSupport.Flag()
        #expect(loop.perform { ran.set() } == false)
        #expect(loop.perform(in: [.default, "other"]) { ran.set() } == false)
        #expect(!ran.isSet)
    }
}
