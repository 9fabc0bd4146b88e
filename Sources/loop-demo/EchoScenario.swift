import Glibc
import RunLoopKit
import RunLoopKitSystem

/// A TCP echo server on descriptor sources, on the main loop: a client thread sends lines and reads the echoes;
/// then a client that sends without reading makes the server stop watching its socket for reading until the
/// client catches up (write backpressure).
enum EchoScenario {
    static func run() {
        let loop = Loop.main
        let server: EchoServer
        do {
            server = try EchoServer(loop: loop, pauseThreshold: 64 * 1024)
        } catch {
            Trace.line("main", "cannot start the echo server: \(error)")
            return
        }
        Trace.line("main", "echo server listening on 127.0.0.1:\(server.port)")

        let client = JoinableThread {
            guard let socket = EchoClient(port: server.port) else {
                Trace.line("client", "cannot connect")
                Loop.main.stop()
                return
            }
            for line in ["hello", "run loop", "goodbye"] {
                socket.send(Array("\(line)\n".utf8))
                Trace.line("client", "sent \"\(line)\", echoed \"\(socket.receiveLine() ?? "?")\"")
            }
            // Backpressure: send without reading a byte of the replies, until the server stops reading.
            let chunk = [UInt8](repeating: 0x61, count: 16 * 1024)
            var sent = 0
            while server.statistics.paused == 0 && sent < 8 * 1024 * 1024 {
                sent += socket.sendSome(chunk)
            }
            let paused = server.statistics.paused == 1
            Trace.line("client", "sent \(sent / 1024) KB without reading; the server stopped reading: \(paused)")
            let received = socket.receive(atLeast: sent)
            let pauses = server.statistics.pauses
            Trace.line("client", "read all \(received / 1024) KB of echoes back; the server paused \(pauses) time(s)")
            socket.close()
            Loop.main.perform { Loop.main.stop() }
        }
        let result = loop.run(in: .default, for: .seconds(20))
        client.join()
        server.stop()
        let statistics = server.statistics
        Trace.line(
            "main",
            "run returned \(result): \(statistics.accepted) connection(s), \(statistics.bytesEchoed) bytes echoed")
    }
}
