import Glibc
import RunLoopKit
import TestSupport
import Testing

/// Handlers that are handed their own item, and a descriptor source whose watched events change after creation.
@Suite struct HandlerItemTests {
    @Test func aSourcesPerformHandlerCanInvalidateItsOwnSource() {
        let performs = Counter()
        let source = LoopSource { source in
            performs.increment()
            source.invalidate()
        }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(source)
            source.signal()
            loop.run(in: .default, for: .seconds(5))
            source.signal()  // Invalidated by its own handler: nothing more happens.
            loop.run(in: .default, for: .zero)
        }
        #expect(performs.current == 1)
        #expect(!source.isValid)
    }

    @Test func aDescriptorHandlerSwitchesBetweenReadableAndWritable() throws {
        let sockets = try SocketPair()
        defer { sockets.close() }
        let reports = Recorder<FileDescriptorSource.Events>()
        let source = try FileDescriptorSource(descriptor: sockets.first, events: .readable) { source, ready in
            reports.append(ready.intersection([.readable, .writable]))
            if ready.contains(.readable) {
                sockets.drainFirst()
                source.events = [.readable, .writable]  // "Output pending": watch writable too.
            } else if ready.contains(.writable) {
                source.events = .readable  // "Output flushed": back to readable only.
            }
        }
        ItemsSupport.onLoopThread { loop in
            try! loop.add(source)
            sockets.writeToSecond()
            ItemsSupport.run(loop) { reports.count >= 2 }
            loop.run(in: .default, for: .milliseconds(50))  // Writable is no longer watched: no more reports.
            source.invalidate()
        }
        #expect(reports.all == [.readable, .writable])
    }

    @Test func eventsChangedFromAnotherThreadStopAndResumeReports() throws {
        let sockets = try SocketPair()
        defer { sockets.close() }
        let handled = Counter()
        let source = try FileDescriptorSource(descriptor: sockets.first, events: .readable) { _, _ in
            sockets.drainFirst()
            handled.increment()
        }
        let running = ItemsSupport.startRunningLoop { loop in try! loop.add(source) }
        defer { running.finish() }
        source.events = []  // From this thread: applied at the loop's next pass (it is woken for it).
        let applied = ItemsSupport.Flag()
        running.loop.perform { applied.set() }  // Runs after the change: the change came first.
        #expect(waitUntil { applied.isSet })
        sockets.writeToSecond()
        #expect(!waitUntil(timeout: .milliseconds(200)) { handled.current > 0 }, "reported while not watched")
        source.events = .readable
        #expect(waitUntil { handled.current == 1 })
        #expect(source.events == .readable)
        source.invalidate()
    }

    @Test func eventsSetBeforeTheSourceIsAddedAreTheOnesWatched() throws {
        let sockets = try SocketPair()
        defer { sockets.close() }
        let reports = Recorder<FileDescriptorSource.Events>()
        let source = try FileDescriptorSource(descriptor: sockets.first, events: .readable) { source, ready in
            reports.append(ready.intersection([.readable, .writable]))
            source.invalidate()
        }
        source.events = .writable
        ItemsSupport.onLoopThread { loop in
            try! loop.add(source)
            ItemsSupport.run(loop) { reports.count == 1 }
        }
        #expect(reports.all == [.writable])
    }
}

/// A connected pair of non-blocking, close-on-exec Unix stream sockets.
struct SocketPair {
    let first: CInt
    let second: CInt

    init() throws {
        var ends: [CInt] = [-1, -1]
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, kind, 0, &ends) == 0 else { throw SocketPairError(code: errno) }
        first = ends[0]
        second = ends[1]
    }

    func writeToSecond() {
        var byte: UInt8 = 1
        _ = write(second, &byte, 1)
    }

    func drainFirst() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(first, &buffer, buffer.count) > 0 {}
    }

    func close() {
        Glibc.close(first)
        Glibc.close(second)
    }

    struct SocketPairError: Error {
        let code: CInt
    }
}
