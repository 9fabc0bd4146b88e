import Glibc
import RunLoopKit
import SplitMix64
import Synchronization

/// `FileDescriptorSource`s on pipes, socket pairs and eventfds, written from a driver thread and read in handlers on
/// the hubs: per hub a pipe in the default mode, a socket pair in the common modes, an eventfd in the default mode
/// and a pipe in the private mode (served only by nested runs; parked between them).
///
/// Every byte carries its stream offset (modulo 251), so the reader checks that each byte written arrives once,
/// in order; an eventfd's counts must add up to what was written. The readers take what their handler call's
/// chunk size allows (64 bytes to 64 KiB), so level-triggered readiness must call them again for the rest. Now and
/// then the driver stops watching a stream while it writes, then watches again (`events` from another thread);
/// every tenth round it retires one stream (invalidating its source, closing both ends on the hub's thread) and
/// opens a new one in its place.
final class DescriptorTraffic: Workload {
    private let streams: [Stream]
    private let driver = DriverThread()
    private let reopened: Tally
    private let seed: UInt64

    /// Streams on every hub of `hubs`; `seed` drives the writer's choices.
    init(hubs: [Hub], seed: UInt64) throws {
        self.seed = seed
        let bytes = Tallies.shared.make("descriptors: bytes (pipes, socket pairs)", promise: "each once, in order")
        let counts = Tallies.shared.make("descriptors: eventfd counts", promise: "sum read = sum written")
        let calls = Tallies.shared.make("descriptors: handler calls", promise: nil)
        reopened = Tallies.shared.make("descriptors: streams closed and reopened", promise: nil)
        var streams: [Stream] = []
        for hub in hubs {
            streams.append(try Stream(.pipe, hub: hub, mode: .default, tally: bytes, calls: calls))
            streams.append(try Stream(.socketPair, hub: hub, mode: .common, tally: bytes, calls: calls))
            streams.append(try Stream(.eventFD, hub: hub, mode: .default, tally: counts, calls: calls))
            streams.append(try Stream(.pipe, hub: hub, mode: Hub.privateMode, tally: bytes, calls: calls))
        }
        self.streams = streams
    }

    func start(_ control: RunControl) throws {
        let (streams, reopened) = (streams, reopened)
        driver.start("descriptors", control: control, seed: seed) { round, random in
            for stream in streams {
                let pause = random.oneIn(6)
                if pause { stream.setWatching(false) }
                stream.write(Int.random(in: 1...8192, using: &random))
                if pause { stream.setWatching(true) }
            }
            let deadline = Waiting.deadline(in: Limits.delivery)
            if !Waiting.until(deadline, { streams.allSatisfy(\.isDrained) }) {
                for stream in streams {
                    stream.verifyDrained("\(Limits.deliverySeconds) s after the round's writes")
                }
            }
            if round % 10 == 0 {
                streams[(round / 10) % streams.count].reopen(onHubThread: random.oneIn(2))
                reopened.deliver()
            }
        }
    }

    func join() {
        driver.join()
    }

    func tearDown() {
        for stream in streams {
            stream.verifyDrained("at the end")
            stream.close(onHubThread: false)
        }
    }

    /// One stream: its descriptors and source (replaced when it is reopened), and how much went through it.
    private final class Stream: @unchecked Sendable {
        // Unchecked: `ends` and `source` are the driver thread's; the handler reads its own copies and the atomics.
        enum Kind: String {
            case pipe
            case socketPair = "socket pair"
            case eventFD = "eventfd"
        }

        let kind: Kind
        let hub: Hub
        let mode: Loop.Mode
        let label: String
        let tally: Tally
        let calls: Tally
        /// Bytes (or eventfd counts) written, all generations of the stream together. Driver thread writes.
        let written = Atomic<Int>(0)
        /// Bytes (or eventfd counts) read. Hub thread writes.
        let readCount = Atomic<Int>(0)
        /// The reader's buffer (hub thread only) and the writer's (driver thread only).
        let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        let writeBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 8)
        /// Whether the reader already reported a corrupt byte (one report per stream is enough).
        let corrupt = Atomic<Bool>(false)
        var ends: (read: CInt, write: CInt) = (-1, -1)
        var source: FileDescriptorSource?

        init(_ kind: Kind, hub: Hub, mode: Loop.Mode, tally: Tally, calls: Tally) throws {
            self.kind = kind
            self.hub = hub
            self.mode = mode
            self.tally = tally
            self.calls = calls
            label = "\(kind.rawValue) in \(mode) of \(hub.name)"
            try open()
        }

        deinit {
            readBuffer.deallocate()
            writeBuffer.deallocate()
        }

        /// Opens a new pair of descriptors and adds a source reading it to the hub. Driver thread.
        private func open() throws {
            switch kind {
            case .pipe: ends = Descriptors.pipe()
            case .socketPair: ends = Descriptors.socketPair()
            case .eventFD:
                let descriptor = Descriptors.eventFD()
                ends = (descriptor, descriptor)
            }
            let descriptor = ends.read
            let source = try FileDescriptorSource(descriptor: descriptor) { [self] source, events in
                readable(descriptor, source, events)
            }
            self.source = source
            try hub.loop.add(source, to: mode)
        }

        /// The handler: reads one chunk and checks it. Hub thread.
        private func readable(_ descriptor: CInt, _ source: FileDescriptorSource, _ events: FileDescriptorSource.Events)
        {
            calls.deliver()
            if kind == .eventFD {
                let value = Int(Descriptors.takeEventFD(descriptor))
                readCount.add(value, ordering: .relaxed)
                tally.deliver(value)
                return
            }
            let offset = readCount.load(ordering: .relaxed)
            let chunk = [64, 512, 4096, 65_536][offset % 4]
            let count = read(descriptor, readBuffer.baseAddress, chunk)
            guard count > 0 else {
                if count == 0 || (errno != EAGAIN && errno != EINTR) {
                    Violations.shared.record("\(label): read answered \(count) (errno \(errno)) for \(events)")
                    source.invalidate()  // Level-triggered: an end of file would call the handler on every pass.
                }
                return
            }
            for index in 0..<count where readBuffer[index] != UInt8((offset + index) % 251) {
                if !corrupt.exchange(true, ordering: .relaxed) {
                    Violations.shared.record(
                        "\(label): byte \(offset + index) is \(readBuffer[index]), not \((offset + index) % 251)")
                }
                break
            }
            readCount.store(offset + count, ordering: .relaxed)
            tally.deliver(count)
        }

        /// Writes `size` bytes of the pattern (for an eventfd: adds `size`). Driver thread.
        func write(_ size: Int) {
            if kind == .eventFD {
                if Descriptors.add(UInt64(size), toEventFD: ends.write) {
                    written.add(size, ordering: .relaxed)
                    tally.expect(size)
                }
                return
            }
            let offset = written.load(ordering: .relaxed)
            for index in 0..<size { writeBuffer[index] = UInt8((offset + index) % 251) }
            let count = Glibc.write(ends.write, writeBuffer.baseAddress, size)
            guard count > 0 else { return }  // A full buffer (EAGAIN): nothing was written.
            written.store(offset + count, ordering: .relaxed)
            tally.expect(count)
        }

        /// Stops or resumes watching for readability, from the driver's thread.
        func setWatching(_ watching: Bool) {
            source?.events = watching ? .readable : []
        }

        /// Whether everything written was read.
        var isDrained: Bool { readCount.load(ordering: .relaxed) == written.load(ordering: .relaxed) }

        /// Records a violation unless everything written was read; `context` says when.
        func verifyDrained(_ context: String) {
            let (written, read) = (written.load(ordering: .relaxed), readCount.load(ordering: .relaxed))
            if written != read { Violations.shared.record("\(label): \(written) written, \(read) read \(context)") }
        }

        /// Invalidates the source and closes both ends: the invalidation from this thread or the hub's, the closing
        /// always on the hub's thread, in a block, so that no handler call is still reading the descriptor.
        func close(onHubThread: Bool) {
            guard let source else { return }
            self.source = nil
            let ends = ends
            if !onHubThread { source.invalidate() }
            do {
                try hub.thread.performAndWait {
                    source.invalidate()
                    Glibc.close(ends.read)
                    if ends.write != ends.read { Glibc.close(ends.write) }
                }
            } catch {
                Violations.shared.record("\(label): closing on the hub threw \(error)")
            }
        }

        /// Retires the stream's descriptors and source and opens new ones. Driver thread, with the stream drained.
        func reopen(onHubThread: Bool) {
            close(onHubThread: onHubThread)
            do {
                try open()
            } catch {
                Violations.shared.record("\(label): reopening threw \(error)")
            }
        }
    }
}
