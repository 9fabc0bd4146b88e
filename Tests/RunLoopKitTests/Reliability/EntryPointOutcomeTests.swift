import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Issue #29 item 6: calls that are accepted and then do nothing. Each has a defined outcome: a result that says so,
/// or a documented no-op that matches CF, which these tests pin down where it can be seen (the review's table is in
/// /work/notes/review-29-item6.md; the changed calls of RunLoopKitServices are tested with their types).
@Suite struct EntryPointOutcomeTests {
    /// `pollDescriptor` of a loop whose thread exited answers -1 (before: the number its epoll set had, closed by then
    /// and perhaps another file's since); a host that keeps asking for it gets nothing to wait on by mistake.
    @Test func pollDescriptorOfALoopWhoseThreadExitedIsMinusOne() {
        let hosted = Box<Loop>()
        let number = Box<CInt>()
        TestThread {
            hosted.value = Loop.current
            number.value = Loop.current.pollDescriptor  // Made while the thread lives: closed with the loop.
        }.join()
        #expect(number.value! >= 0)
        #expect(hosted.value!.isTerminated)
        #expect(hosted.value!.pollDescriptor == -1)
        let other = Box<Loop>()
        TestThread { other.value = Loop.current }.join()  // Never embedded: no host's set was made.
        #expect(other.value!.pollDescriptor == -1)
    }

    /// Adding an item to a mode it is in already does nothing, as in CF (a mode holds an item once): the schedule
    /// handler runs once, and one removal takes it out.
    @Test func addingAnItemToAModeTwiceIsOneMembership() {
        let schedules = Atomic<Int>(0)
        let cancels = Atomic<Int>(0)
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource(
                schedule: { _, _ in schedules.add(1, ordering: .relaxed) },
                cancel: { _, _ in cancels.add(1, ordering: .relaxed) },
                perform: { _ in })
            try! loop.add(source)
            try! loop.add(source)
            #expect(schedules.load(ordering: .relaxed) == 1)
            loop.remove(source)
            #expect(!loop.contains(source))
            #expect(cancels.load(ordering: .relaxed) == 1)
            source.invalidate()
        }
    }

    /// Removing an item from a mode it is not in does nothing, as in CF: no cancel handler runs, and the item stays
    /// in its other modes.
    @Test func removingAnItemThatIsNotThereDoesNothing() {
        let cancels = Atomic<Int>(0)
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource(cancel: { _, _ in cancels.add(1, ordering: .relaxed) }, perform: { _ in })
            let stranger = LoopSource { _ in }
            try! loop.add(source, to: "A")
            loop.remove(source)  // Not in the default mode.
            loop.remove(stranger)  // In no loop at all.
            #expect(cancels.load(ordering: .relaxed) == 0)
            #expect(loop.contains(source, in: "A"))
            source.invalidate()
        }
    }

    /// Signalling an invalidated source does nothing, as in CF (a signal marks only a valid source): it is not
    /// signalled, and nothing is performed.
    @Test func signallingAnInvalidatedSourceDoesNothing() {
        let performs = Atomic<Int>(0)
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in performs.add(1, ordering: .relaxed) }
            try! loop.add(source)
            source.invalidate()
            source.signal()
            #expect(!source.isSignalled)
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .zero)
            #expect(performs.load(ordering: .relaxed) == 0)
        }
    }

    /// Adding a mode that is common already changes nothing, as in CF: the items of `.common` join it once.
    @Test func addingACommonModeTwiceChangesNothing() {
        let schedules = Atomic<Int>(0)
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource(schedule: { _, _ in schedules.add(1, ordering: .relaxed) }, perform: { _ in })
            try! loop.add(source, to: .common)
            loop.addCommonMode("A")
            loop.addCommonMode("A")
            loop.addCommonMode(.default)
            #expect(loop.commonModes == [.default, "A"])
            #expect(schedules.load(ordering: .relaxed) == 2)  // Default and A, once each.
            source.invalidate()
        }
    }

    /// `stop()` and `wakeUp()` on a loop whose thread exited do nothing, as CF's on a loop that is not running: no
    /// trap, no write to its closed eventfd.
    @Test func stopAndWakeUpOnATerminatedLoopDoNothing() {
        let loop = Box<Loop>()
        TestThread { loop.value = Loop.current }.join()
        loop.value!.stop()
        loop.value!.wakeUp()
        #expect(loop.value!.isTerminated)
        #expect(loop.value!.wakeUpWrites == 0)
    }
}
