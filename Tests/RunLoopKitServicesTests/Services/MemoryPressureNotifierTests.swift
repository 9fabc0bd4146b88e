import Glibc
import RunLoopKit
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKitServices

/// systemd's convention for machines without PSI: `MEMORY_PRESSURE_WATCH` (or `path`) names a FIFO another service
/// writes to, or a Unix socket it listens on, as sd-event accepts. And what is neither a pressure file nor a
/// notifier is refused before anything is written.
@Suite struct MemoryPressureNotifierTests {
    private static let trigger = try! MemoryPressureTrigger(parsing: "some 150ms 2s")

    /// Each message on the FIFO is one `thresholdExceeded`, read and dropped (no second call for the same bytes).
    /// The source holds the FIFO for writing too: a notifier that closes it is no hang-up, and the next one is
    /// heard.
    @Test func aNotifierFIFOFiresTheSourceAndSurvivesItsWriterLeaving() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let fifo = directory.path("pressure.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let events = Recorder<MemoryPressureSource.Event>()
        let source = try MemoryPressureSource(trigger: Self.trigger, path: fifo) { _, event in events.append(event) }
        #expect(source.kind == .notifierPipe)
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        try running.loop.add(source)

        for round in 1...2 {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            #expect(writer >= 0, "open: errno \(errno)")
            #expect(write(writer, "pressure\n", 9) == 9)
            #expect(waitUntil { events.count == round })
            close(writer)  // The notifier goes away; another opens the FIFO for the next round.
            running.loop.perform {}  // A pass after the close: a hang-up would end the source there.
            #expect(waitUntil { running.loop.isWaiting })
        }
        #expect(events.all == [.thresholdExceeded, .thresholdExceeded])
        #expect(source.isValid)
        source.invalidate()
    }

    /// Named by the service manager: the source connects, sends the service manager's trigger bytes as decoded
    /// (systemd's exact value, whose text ends with a NUL; sd-event's test value "hello\n", which has none), fires
    /// on each message, and ends with `fileRemoved` when the notifier hangs up.
    @Test(arguments: [
        (MemoryPressureWatchTests.systemdWrite, Array("some 200000 2000000".utf8) + [0]),
        ("aGVsbG8K", Array("hello\n".utf8)),
    ])
    func aNotifierSocketGetsTheTriggerFiresTheSourceAndEndsItWhenItHangsUp(encoded: String, sent: [UInt8]) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("pressure.socket")
        let listener = try #require(Self.listeningSocket(at: path))
        defer { close(listener) }
        let environment = [
            "MEMORY_PRESSURE_WATCH": path,
            "MEMORY_PRESSURE_WRITE": encoded,
        ]
        let events = Recorder<MemoryPressureSource.Event>()
        let validInHandler = Recorder<Bool>()
        let source = try MemoryPressureSource(trigger: Self.trigger, environment: environment) { source, event in
            events.append(event)
            validInHandler.append(source.isValid)
        }
        #expect(source.kind == .notifierSocket && source.path == path)
        let connection = accept(listener, nil, nil)
        #expect(connection >= 0, "accept: errno \(errno)")
        var received = [UInt8](repeating: 0, count: 64)
        let count = read(connection, &received, received.count)
        #expect(Array(received.prefix(max(count, 0))) == sent)

        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        try running.loop.add(source)
        #expect(write(connection, "p", 1) == 1)
        #expect(waitUntil { events.count == 1 })
        close(connection)
        #expect(waitUntil { events.count == 2 })
        #expect(events.all == [.thresholdExceeded, .fileRemoved])
        #expect(validInHandler.all == [true, false])
        #expect(!source.isValid)
        #expect(source.pressureDescriptor == nil)
    }

    /// A socket file nobody listens on: a typed error naming the refusal, nothing left open. In a child process: the
    /// ledger of open descriptors is process-wide, and other tests open sockets meanwhile.
    @Test func aSocketWithNoNotifierIsATypedError() async {
        await #expect(processExitsWith: .success) {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let path = directory.path("gone.socket")
            guard let listener = MemoryPressureNotifierTests.listeningSocket(at: path) else { exit(1) }
            close(listener)  // The file stays; connections are refused.
            let refused = MemoryPressureNotifierTests.refusal(path: path)
            guard refused.code == .systemCallFailed, refused.errno == ECONNREFUSED, refused.leftOpen.isEmpty else {
                exit(2)
            }
            exit(0)
        }
    }

    /// A socket whose path is too long for a Unix socket address: `invalidArgument`, nothing left open.
    @Test func aSocketPathTooLongForAnAddressIsAnInvalidArgument() async {
        await #expect(processExitsWith: .success) {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            guard let listener = MemoryPressureNotifierTests.listeningSocket(at: directory.path("s")) else { exit(1) }
            defer { close(listener) }
            // The same socket file through a path longer than sun_path: a chain of "./" components.
            let long = directory.path + String(repeating: "/.", count: 60) + "/s"
            let refused = MemoryPressureNotifierTests.refusal(path: long)
            guard refused.code == .invalidArgument, refused.errno == ENAMETOOLONG, refused.leftOpen.isEmpty else {
                exit(2)
            }
            exit(0)
        }
    }

    /// What making a source on `path` threw, and the descriptors the library opened meanwhile and left open.
    private static func refusal(path: String) -> (code: LoopError.Code?, errno: CInt?, leftOpen: [CInt]) {
        let before = FaultInjection.openDescriptors
        var failure: LoopError?
        do throws(LoopError) {
            let source = try MemoryPressureSource(trigger: trigger, path: path) { _, _ in }
            source.invalidate()
        } catch {
            failure = error
        }
        let leftOpen = FaultInjection.openDescriptors.keys.filter { before[$0] == nil }
        return (failure?.code, failure?.errno, Array(leftOpen))
    }

    /// A regular file outside procfs and cgroupfs (a trigger written there would change someone's file), a
    /// directory, and a relative `MEMORY_PRESSURE_WATCH` are refused as `invalidArgument`; the file is unchanged.
    @Test func whatIsNeitherAPressureFileNorANotifierIsRefusedUntouched() {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        directory.write("plain", "mine")
        let cases: [(path: String?, environment: [String: String]?)] = [
            (directory.path("plain"), nil),
            (directory.path, nil),
            (nil, ["MEMORY_PRESSURE_WATCH": "pressure.fifo"]),
        ]
        for (path, environment) in cases {
            do throws(LoopError) {
                let source = try MemoryPressureSource(trigger: Self.trigger, path: path, environment: environment) {
                    _, _ in
                }
                source.invalidate()
                Issue.record("\(path ?? "environment"): no error")
            } catch {
                #expect(error.code == .invalidArgument, "\(path ?? "environment"): \(error)")
            }
        }
        let contents = try? FileDescriptorCalls.contents(of: directory.path("plain"))
        #expect(contents == Array("mine".utf8))
    }

    /// A Unix stream socket listening at `path`, or `nil`.
    private static func listeningSocket(at path: String) -> CInt? {
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { return nil }
        var (address, length) = UnixSocketAddress.make(Array(path.utf8))
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        guard bound == 0, listen(listener, 4) == 0 else {
            close(listener)
            return nil
        }
        return listener
    }
}
