import Glibc
import RunLoopKit
import Synchronization

/// A TCP echo server on 127.0.0.1 built on descriptor sources, with write backpressure: what a user writes for a
/// small network service on a RunLoopKit loop.
///
/// One descriptor source watches the listening socket; each connection gets its own, whose handler is handed the
/// source so it can change what it watches. A connection reads while its output buffer is short, watches
/// writable only while output is pending, and stops reading altogether once `pauseThreshold` bytes wait for a
/// client that does not read its replies, until the buffer drained below half of it.
///
/// Threading: create it, and call ``stop()``, on the thread whose loop serves it; ``statistics`` from any thread.
final class EchoServer: @unchecked Sendable {  // Unchecked: `connections` is touched on the loop's thread only.
    /// Counters readable from any thread.
    struct Statistics: Sendable {
        var accepted = 0
        var closed = 0
        var bytesEchoed = 0
        /// How many times a connection stopped reading because its client did not read its replies.
        var pauses = 0
        /// Connections whose reading is paused now.
        var paused = 0
    }

    /// The port the server listens on (chosen by the kernel).
    let port: UInt16
    let pauseThreshold: Int
    private let listener: CInt
    private var listenerSource: FileDescriptorSource?
    private var connections: [CInt: Connection] = [:]
    private let counters = Mutex(Statistics())

    /// Starts listening on 127.0.0.1 (an ephemeral port) and serving on `loop` in its common modes.
    init(loop: Loop, pauseThreshold: Int = 256 * 1024) throws {
        self.pauseThreshold = pauseThreshold
        (listener, port) = try LoopbackListener.open(backlog: 128)
        listenerSource = try FileDescriptorSource(descriptor: listener) { [unowned self] _, _ in acceptAll(on: loop) }
        try loop.add(listenerSource!, to: .common)
    }

    /// What the server did so far. Safe from any thread.
    var statistics: Statistics { counters.withLock { $0 } }

    /// Closes every connection and the listening socket. On the serving loop's thread.
    func stop() {
        for connection in connections.values { connection.close() }
        connections.removeAll()
        listenerSource?.invalidate()
        listenerSource = nil
        close(listener)
    }

    private func acceptAll(on loop: Loop) {
        while true {
            guard let descriptor = LoopbackListener.accept(on: listener) else { return }  // None pending.
            let connection = Connection(descriptor: descriptor, server: self)
            do {
                try connection.start(on: loop)
                connections[descriptor] = connection
                counters.withLock { $0.accepted += 1 }
            } catch {
                connection.close()
            }
        }
    }

    fileprivate func record(_ change: (inout Statistics) -> Void) {
        counters.withLock { change(&$0) }
    }

    fileprivate func closed(_ connection: Connection) {
        connections[connection.descriptor] = nil
        record { $0.closed += 1 }
    }
}

/// One client: what it sent and the server has not written back yet, and the source watching its socket.
private final class Connection: @unchecked Sendable {  // Unchecked: touched on the serving loop's thread only.
    let descriptor: CInt
    private unowned let server: EchoServer
    private var pending: [UInt8] = []
    private var source: FileDescriptorSource?
    private var isPaused = false
    private var peerClosed = false

    init(descriptor: CInt, server: EchoServer) {
        self.descriptor = descriptor
        self.server = server
    }

    func start(on loop: Loop) throws {
        let source = try FileDescriptorSource(descriptor: descriptor, events: .readable) { [self] source, ready in
            if ready.contains(.readable) || ready.contains(.hangUp) { read() }
            if ready.contains(.writable) || !pending.isEmpty { flush() }
            if peerClosed && pending.isEmpty || ready.contains(.error) {
                close()
                server.closed(self)
                return
            }
            source.events = wantedEvents()
        }
        self.source = source
        try loop.add(source, to: .common)
    }

    /// Readable while the output buffer is below the threshold (resuming below half of it), writable while output
    /// is pending.
    private func wantedEvents() -> FileDescriptorSource.Events {
        if isPaused && pending.count < server.pauseThreshold / 2 {
            isPaused = false
            server.record { $0.paused -= 1 }
        } else if !isPaused && pending.count >= server.pauseThreshold {
            isPaused = true
            server.record {
                $0.paused += 1
                $0.pauses += 1
            }
        }
        var events: FileDescriptorSource.Events = pending.isEmpty ? [] : .writable
        if !isPaused && !peerClosed { events.insert(.readable) }
        return events
    }

    private func read() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = Glibc.read(descriptor, &buffer, buffer.count)
        if count > 0 {
            pending.append(contentsOf: buffer[0..<count])
        } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
            peerClosed = true
        }
    }

    private func flush() {
        guard !pending.isEmpty else { return }
        let written = pending.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        guard written > 0 else { return }  // EAGAIN: the client's receive window is full.
        pending.removeFirst(written)
        server.record { $0.bytesEchoed += written }
    }

    func close() {
        source?.invalidate()
        source = nil
        Glibc.close(descriptor)
    }
}

/// A failed socket call of the echo server.
struct EchoError: Error, CustomStringConvertible {
    let description: String
    init(_ call: String, _ code: CInt) {
        description = "\(call) failed: \(String(cString: strerror(code)))"
    }
}
