import Glibc
import RunLoopKit
import Synchronization

/// The daemon scenario's service: a TCP line protocol on 127.0.0.1. A client sends `work N` and, N milliseconds of
/// work on a worker thread later, gets `done N` back. The main loop owns the sockets; the worker `LoopThread` does
/// the work and hands each reply back to the main loop, which writes it.
///
/// Threading: create it, ``stopAccepting()`` and ``closeConnections()`` on the serving loop's thread; ``counts`` from
/// any thread.
// Unchecked Sendable: the sockets and `connections` are touched on the loop's thread only.
final class WorkService: @unchecked Sendable {
    /// Requests received, replies written, and requests refused because the service was stopping.
    struct Counts: Sendable {
        var received = 0
        var answered = 0
        var refused = 0
    }

    /// The port the service listens on (chosen by the kernel).
    let port: UInt16
    private let loop: Loop
    private let worker: LoopThread
    private let listener: CInt
    private var listenerSource: FileDescriptorSource?
    private var connections: [CInt: FileDescriptorSource] = [:]
    private var accepting = true
    private let tally = Mutex(Counts())

    /// Listens on 127.0.0.1 and serves on `loop`'s common modes, with the work done on `worker`.
    init(loop: Loop, worker: LoopThread) throws {
        self.loop = loop
        self.worker = worker
        (listener, port) = try LoopbackListener.open(backlog: 16)
        listenerSource = try FileDescriptorSource(descriptor: listener) { [unowned self] _, _ in acceptAll() }
        try loop.add(listenerSource!, to: .common)
    }

    /// What the service did so far. Any thread.
    var counts: Counts { tally.withLock { $0 } }

    /// Closes the listening socket and refuses requests from now on; work already accepted goes on.
    func stopAccepting() {
        accepting = false
        listenerSource?.invalidate()
        listenerSource = nil
        close(listener)
    }

    /// Closes every connection.
    func closeConnections() {
        for (descriptor, source) in connections {
            source.invalidate()
            close(descriptor)
        }
        connections.removeAll()
    }

    private func acceptAll() {
        while accepting {
            guard let descriptor = LoopbackListener.accept(on: listener) else { return }  // None pending.
            do {
                let source = try FileDescriptorSource(descriptor: descriptor) { [unowned self] source, _ in
                    readRequests(from: source)
                }
                try loop.add(source, to: .common)
                connections[descriptor] = source
            } catch {
                close(descriptor)
            }
        }
    }

    /// Reads what the client sent: each `work N` line goes to the worker, unless the service is stopping.
    private func readRequests(from source: FileDescriptorSource) {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = read(source.descriptor, &buffer, buffer.count)
        guard count > 0 else {  // The client closed (or failed): forget the connection.
            connections[source.descriptor] = nil
            source.invalidate()
            close(source.descriptor)
            return
        }
        for line in String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count == 2, words[0] == "work", let milliseconds = Int(words[1]) else { continue }
            tally.withLock { $0.received += 1 }
            let descriptor = source.descriptor
            guard accepting else {
                tally.withLock { $0.refused += 1 }
                reply("refused \(milliseconds)", to: descriptor)
                continue
            }
            _ = worker.perform { [loop] in
                usleep(UInt32(milliseconds) * 1_000)  // The work.
                loop.perform { [self] in
                    tally.withLock { $0.answered += 1 }
                    reply("done \(milliseconds)", to: descriptor)
                }
            }
        }
    }

    private func reply(_ text: String, to descriptor: CInt) {
        guard connections[descriptor] != nil else { return }
        var bytes = Array("\(text)\n".utf8)
        _ = write(descriptor, &bytes, bytes.count)  // A few bytes: the socket buffer takes them.
    }
}
