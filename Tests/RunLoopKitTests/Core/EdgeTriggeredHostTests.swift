import CRunLoopShims
import Glibc
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKit

/// A host that waits edge-triggered on `pollDescriptor`, as CF's run loop does with a port's descriptor: it hears of
/// the descriptor only when it *becomes* readable. A descriptor source whose handler reads one byte of three leaves
/// its (level-triggered) entry ready in the loop's epoll set, which then gives the host no new edge; `runPass()`
/// must answer `true` for it, or the other two bytes wait for some unrelated wake-up.
@Suite struct EdgeTriggeredHostTests {
    @Test func aHandlerThatReadsPartOfWhatIsReadyIsCalledAgainWithoutANewEdge() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let bytesRead = Counter()
        let waitsTimedOut = Box<Int>()
        let ready = ItemsSupport.Flag()
        let host = TestThread {
            let loop = Loop.current
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                var byte: UInt8 = 0
                if read(pipe.readEnd, &byte, 1) == 1 { bytesRead.increment() }  // One byte per call, on purpose.
            }
            try! loop.add(source)
            let timedOut = Self.host(loop, waitMilliseconds: 2_000, until: { bytesRead.current == 3 }) {
                ready.set()  // Ready for the writer: the bytes come while the host waits.
            }
            waitsTimedOut.value = timedOut
            source.invalidate()
        }
        #expect(waitUntil { ready.isSet })
        let three: [UInt8] = [1, 2, 3]
        #expect(write(pipe.writeEnd, three, 3) == 3)  // One write: one edge for all three bytes.
        host.join()
        #expect(bytesRead.current == 3)
        #expect(waitsTimedOut.value == 0, "the host waited with bytes unread: runPass() answered false too early")
    }

    /// The check costs one `poll(2)` only after passes that reported a descriptor: an idle host's pass answers
    /// `false` and the host sleeps until a new edge.
    @Test func anIdleEdgeTriggeredHostSleepsAndIsWokenBySignals() throws {
        let handled = ItemsSupport.Flag()
        let waitsTimedOut = Box<Int>()
        let sourceBox = Box<LoopSource>()
        let loopBox = Box<Loop>()
        let host = TestThread {
            let loop = Loop.current
            let source = LoopSource { _ in handled.set() }
            try! loop.add(source)
            sourceBox.value = source
            loopBox.value = loop
            waitsTimedOut.value = Self.host(loop, waitMilliseconds: 5_000, until: { handled.isSet })
            source.invalidate()
        }
        #expect(waitUntil { loopBox.value?.isWaiting == true })
        sourceBox.value!.signal()
        host.join()
        #expect(handled.isSet)
        #expect(waitsTimedOut.value == 0)
    }

    /// Hosts `loop` on the calling thread (its own) as CF does: `pollDescriptor` in an epoll set of the host's,
    /// edge-triggered; passes while `runPass()` answers `true`, then a wait of at most `waitMilliseconds`, until `done`
    /// holds (30 s at most). `beforeFirstWait` runs once, just before the host first waits. Answers how many waits
    /// ended by their time limit: each one a readiness the host never heard of.
    static func host(
        _ loop: Loop, waitMilliseconds: CInt, until done: () -> Bool, beforeFirstWait: () -> Void = {}
    ) -> Int {
        let hostSet = try! Epoll.create()
        defer { close(hostSet) }
        try! Epoll.add(hostSet, loop.pollDescriptor, events: [.input, .edgeTriggered], data: 7)
        let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1)
        defer { events.deallocate() }
        var timedOut = 0
        var waited = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !done() && ContinuousClock.now < deadline {
            if loop.runPass() || done() { continue }
            if !waited {
                waited = true
                beforeFirstWait()
                continue  // One more pass: what came meanwhile is served before the wait.
            }
            if try! Epoll.wait(hostSet, into: events, timeoutMilliseconds: waitMilliseconds) == 0 { timedOut += 1 }
        }
        return timedOut
    }
}
