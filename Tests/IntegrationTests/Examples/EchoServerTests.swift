import Glibc
import RunLoopKit
import TestSupport
import Testing

@testable import loop_demo

/// The demo's TCP echo server (descriptor sources whose handlers change what they watch): every byte comes back
/// in order, and a client that stops reading makes the server stop watching its socket for reading.
@Suite struct EchoServerTests {
    /// An echo server served by a loop thread, until `finish()`.
    struct RunningServer {
        let server: EchoServer
        let loop: Loop
        let thread: TestThread
        let stop: ItemsSupport.Flag

        init(pauseThreshold: Int) {
            let box = Box<EchoServer>()
            let stop = ItemsSupport.Flag()
            (loop, thread) = startLoopThread { loop in
                let server = try! EchoServer(loop: loop, pauseThreshold: pauseThreshold)
                box.value = server
                while !stop.isSet { loop.run(in: .default, for: .milliseconds(100)) }
                server.stop()
            }
            _ = waitUntil { box.value != nil }
            server = box.value!
            self.stop = stop
        }

        func finish() {
            stop.set()
            loop.wakeUp()
            thread.join()
        }
    }

    @Test func aThousandLinesAreEchoedExactly() throws {
        let running = RunningServer(pauseThreshold: 256 * 1024)
        defer { running.finish() }
        let server = running.server
        let client = try #require(EchoClient(port: server.port))
        defer { client.close() }
        let lines = (1...1_000).map { "line \($0) of the echo test" }
        client.send(Array(lines.map { $0 + "\n" }.joined().utf8))
        var echoed: [String] = []
        while echoed.count < lines.count, let line = client.receiveLine() { echoed.append(line) }
        #expect(echoed == lines)
        #expect(server.statistics.accepted == 1)
    }

    @Test func aClientThatStopsReadingMakesTheServerStopReading() throws {
        let running = RunningServer(pauseThreshold: 64 * 1024)
        defer { running.finish() }
        let server = running.server
        let client = try #require(EchoClient(port: server.port))
        defer { client.close() }
        let chunk = [UInt8](repeating: 0x62, count: 16 * 1024)
        var sent = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while server.statistics.paused == 0 && ContinuousClock.now < deadline { sent += client.sendSome(chunk) }
        #expect(server.statistics.paused == 1, "the server never stopped reading")
        // Paused: the server reads nothing more, so what the client can still send is bounded by socket buffers.
        let echoedWhilePaused = server.statistics.bytesEchoed
        #expect(echoedWhilePaused < sent)
        // Reading resumes once the client catches up, and every byte comes back.
        #expect(client.receive(atLeast: sent) == sent)
        #expect(waitUntil { server.statistics.bytesEchoed == sent })
        #expect(server.statistics.paused == 0)
        #expect(server.statistics.pauses >= 1)
    }
}
