import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// What a descriptor source's handler is told, the way C libraries drive sockets through callbacks ("watch this
/// socket for IN, now OUT, now nothing"): reports masked to what the source watches at the moment of the call,
/// `events = []` watching nothing at all, and `.priority`.
@Suite struct FileDescriptorReportTests {
    /// A handler earlier in the pass takes `.writable` away from another source that was reported writable in the
    /// same `epoll_wait`: that source is not called (libuv's rule), where it used to be called with `.writable`.
    @Test func aChangeMadeEarlierInThePassMasksTheReport() throws {
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let pair = try! SocketPair()
            let trigger = Pipe()
            let writer = try! FileDescriptorSource(descriptor: pair.first, events: .writable, order: 1) { _, events in
                calls.append("writer \(events)")
            }
            let first = try! FileDescriptorSource(descriptor: trigger.readEnd, order: 0) { _, _ in
                trigger.drain()
                writer.events = .readable  // The socket is writable, not readable: nothing to tell now.
                calls.append("first")
            }
            try! loop.add(writer)
            try! loop.add(first)
            trigger.write()
            _ = loop.run(in: .default, for: .milliseconds(100))
            writer.invalidate()
            first.invalidate()
            pair.close()
            trigger.close()
        }
        #expect(calls.all == ["first"])
    }

    /// `events = []` watches nothing: a hung-up socket (whose hang-up epoll reports whatever is asked) calls its
    /// handler not once, where it used to be called about 30,000 times in 20 ms; watching again reports the
    /// hang-up at once.
    @Test func watchingNothingSilencesAHungUpSocketUntilWatchedAgain() throws {
        let calls = Recorder<String>()
        let passes = Counter()
        ItemsSupport.onLoopThread { loop in
            let pair = try! SocketPair()
            let source = try! FileDescriptorSource(descriptor: pair.first, events: []) { source, events in
                calls.append("\(events)")
                source.events = []  // One report per watch: the one-shot shape a C library asks for.
            }
            try! loop.add(source)
            try! loop.add(LoopObserver(activities: .beforeTimers) { _, _ in passes.increment() })
            Glibc.close(pair.second)  // The peer hangs up.
            _ = loop.run(in: .default, for: .milliseconds(50))
            calls.append("watched nothing for 50 ms")
            source.events = .readable
            _ = loop.run(in: .default, for: .milliseconds(50))
            source.invalidate()
            Glibc.close(pair.first)
        }
        #expect(calls.all == ["watched nothing for 50 ms", "readable|hangUp"])
        #expect(passes.current < 50, "the loop spun: \(passes.current) passes in 100 ms")
    }

    /// Urgent data on a TCP connection is reported as `.priority` to a source that asks for it, and not to one
    /// that watches only `.readable`.
    @Test func urgentDataIsReportedAsPriority() throws {
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let (client, server) = Self.loopbackConnection()
            let watcher = try! FileDescriptorSource(descriptor: server, events: .priority) { source, events in
                calls.append("\(events)")
                var byte: UInt8 = 0
                _ = recv(server, &byte, 1, Int32(MSG_OOB))
                source.invalidate()
            }
            try! loop.add(watcher)
            var byte: UInt8 = 7
            precondition(send(client, &byte, 1, Int32(MSG_OOB)) == 1)
            _ = loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true)
            watcher.invalidate()
            Glibc.close(client)
            Glibc.close(server)
        }
        #expect(calls.all.first?.contains("priority") == true, "\(calls.all)")
        #expect(calls.all.count == 1)
    }

    /// A connected pair of TCP sockets on the loopback interface: (client, accepted server end).
    static func loopbackConnection() -> (CInt, CInt) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(listener >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                precondition(bind(listener, address, length) == 0 && listen(listener, 1) == 0)
                precondition(getsockname(listener, address, &length) == 0)
            }
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) }
        }
        precondition(connected == 0)
        let server = accept(listener, nil, nil)
        precondition(server >= 0)
        Glibc.close(listener)
        return (client, server)
    }
}
