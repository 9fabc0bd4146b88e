import Glibc
import RunLoopKit

/// Answers a line protocol on every connection to the listening sockets it is given, on `Loop.main`.
///
/// `stats` answers with the loop's figures, `quit` closes the connection, any other line comes back as `echo <line>`.
/// The server lives on the main thread: its sources are made through `Loop.main.assumeIsolated()`, so their handlers
/// use its state directly, with no lock. Call it from the main thread only.
@MainActor final class LineServer {
    private var listeners: [FileDescriptorSource] = []
    private var connections: [CInt: Connection] = [:]
    private let startFigures = Loop.main.metrics
    private let mainLoop = Loop.main.assumeIsolated()  // Makes sources whose handlers run on the main actor.
    private var accepted = 0
    private var answered = 0

    /// Accepts connections on `descriptors`, which must be listening stream sockets.
    init(listeningOn descriptors: [CInt]) throws {
        for descriptor in descriptors {
            let listener = try mainLoop.makeDescriptorSource(descriptor: descriptor) { [weak self] _, _ in
                self?.acceptConnection(from: descriptor)
            }
            try Loop.main.add(listener)
            listeners.append(listener)
        }
    }

    /// One line about the connections and the loop since the server started.
    func statistics() -> String {
        let now = Loop.main.metrics
        let awakePercent = (now.utilization(since: startFigures) * 1000).rounded() / 10
        let longestPass = Int(now.longestPass / .microseconds(1))
        return "connections \(connections.count) open, \(accepted) accepted; lines \(answered); "
            + "loop passes \(now.passes - startFigures.passes), awake \(awakePercent)%, longest pass \(longestPass) µs"
    }

    /// Stops accepting, answers the lines each client has sent already, says `bye` and closes every connection.
    /// New connections wait in the socket's queue, which systemd keeps open, for the service's next start.
    func stop() {
        for listener in listeners { listener.invalidate() }
        listeners.removeAll()
        for descriptor in connections.keys {
            serveConnection(on: descriptor)
            connections[descriptor]?.send("bye")
            connections[descriptor]?.close()
        }
        connections.removeAll()
    }

    private func acceptConnection(from listener: CInt) {
        let descriptor = accept(listener, nil, nil)
        guard descriptor >= 0 else { return }  // Gone already (the client hung up), or out of descriptors.
        do {
            let source = try mainLoop.makeDescriptorSource(descriptor: descriptor) {
                [weak self] _, _ in
                self?.serveConnection(on: descriptor)
            }
            try Loop.main.add(source)
            connections[descriptor] = Connection(descriptor: descriptor, source: source)
            accepted += 1
        } catch {
            log("cannot watch a connection: \(error)")
            close(descriptor)
        }
    }

    /// Reads what the client sent and answers each complete line.
    private func serveConnection(on descriptor: CInt) {
        guard let connection = connections[descriptor] else { return }
        guard let lines = connection.receiveLines() else { return drop(connection) }
        for line in lines {
            answered += 1
            switch line {
            case "stats": connection.send(statistics())
            case "quit": return drop(connection)
            default: connection.send("echo \(line)")
            }
        }
    }

    private func drop(_ connection: Connection) {
        connection.close()
        connections[connection.descriptor] = nil
    }
}
