import CRunLoopShims
import Glibc
import RunLoopKitSystem
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
        let waitsTimedOut = Counter()
        let ready = ItemsSupport.Flag()
        let host = TestThread {
            let loop = Loop.current
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
                var byte: UInt8 = 0
                if read(pipe.readEnd, &byte, 1) == 1 { bytesRead.increment() }  // One byte per call, on purpose.
            }
            try! loop.add(source)
            let hostSet = try! Epoll.create()
            defer { close(hostSet) }
            try! Epoll.add(hostSet, loop.pollDescriptor, events: [.input, .edgeTriggered], data: 7)
            let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1)
            defer { events.deallocate() }
            let deadline = ContinuousClock.now + .seconds(30)
            while bytesRead.current < 3 && ContinuousClock.now < deadline {
                if loop.runPass() || bytesRead.current == 3 { continue }
                if !ready.isSet {
                    ready.set()
                    continue  // Ready for the writer: the bytes come while the host waits.
                }
                if try! Epoll.wait(hostSet, into: events, timeoutMilliseconds: 2_000) == 0 { waitsTimedOut.increment() }
            }
            source.invalidate()
        }
        #expect(waitUntil { ready.isSet })
        let three: [UInt8] = [1, 2, 3]
        #expect(write(pipe.writeEnd, three, 3) == 3)  // One write: one edge for all three bytes.
        host.join()
        #expect(bytesRead.current == 3)
        #expect(waitsTimedOut.current == 0, "the host waited with bytes unread: runPass() answered false too early")
    }

    /// The check costs one `poll(2)` only after passes that reported a descriptor: an idle host's pass answers
    /// `false` and the host sleeps until a new edge.
    @Test func anIdleEdgeTriggeredHostSleepsAndIsWokenBySignals() throws {
        let handled = ItemsSupport.Flag()
        let waitsTimedOut = Counter()
        let sourceBox = Box<LoopSource>()
        let loopBox = Box<Loop>()
        let host = TestThread {
            let loop = Loop.current
            let source = LoopSource { _ in handled.set() }
            try! loop.add(source)
            sourceBox.value = source
            loopBox.value = loop
            let hostSet = try! Epoll.create()
            defer { close(hostSet) }
            try! Epoll.add(hostSet, loop.pollDescriptor, events: [.input, .edgeTriggered], data: 7)
            let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1)
            defer { events.deallocate() }
            let deadline = ContinuousClock.now + .seconds(30)
            while !handled.isSet && ContinuousClock.now < deadline {
                if loop.runPass() || handled.isSet { continue }
                if try! Epoll.wait(hostSet, into: events, timeoutMilliseconds: 5_000) == 0 { waitsTimedOut.increment() }
            }
            source.invalidate()
        }
        #expect(waitUntil { loopBox.value?.isWaiting == true })
        sourceBox.value!.signal()
        host.join()
        #expect(handled.isSet)
        #expect(waitsTimedOut.current == 0)
    }
}
