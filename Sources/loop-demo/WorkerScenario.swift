import RunLoopKit
import RunLoopKitSystem

/// A keep-alive worker thread (AFNetworking's network thread on Apple platforms), used from several threads: a LoopThread sleeps in its loop until
/// the main thread hands it requests, answers them, and is stopped cleanly.
enum WorkerScenario {
    static func run() {
        let worker: LoopThread
        do {
            worker = try LoopThread(name: "demo-worker")
        } catch {
            Trace.line("main", "cannot start the worker: \(error)")
            return
        }
        Trace.line("main", "started LoopThread \"\(worker.name)\" (thread id \(worker.threadID))")
        for request in [3, 10, 25] {
            let start = Loop.Instant.now
            do {
                let (sum, onWorker) = try worker.performAndWait {
                    ((1...request).reduce(0, +), worker.loop.isCurrent)
                }
                let micros = Trace.microseconds(from: start, to: .now)
                Trace.line(
                    "main",
                    "request sum(1...\(request)) = \(sum), computed on the worker: \(onWorker), "
                        + "answered in \(micros) µs")
            } catch {
                Trace.line("main", "request failed: \(error)")
            }
        }
        // Several threads use the same worker at once: each request runs on the worker, one at a time.
        let clients = (1...3).map { client in
            JoinableThread {
                for request in 1...2 {
                    let answer = try? worker.performAndWait { "client \(client), request \(request) served" }
                    Trace.line("client\(client)", answer ?? "request refused")
                }
            }
        }
        for client in clients { client.join() }
        if !worker.perform({ Trace.line("worker", "a last fire-and-forget block, accepted before the stop") }) {
            Trace.line("main", "unexpected: perform refused before the stop")
        }
        worker.stop()
        Trace.line("main", "stop() returned: the worker ran what it had accepted and its thread exited")
        if worker.perform({}) {
            Trace.line("main", "unexpected: work accepted after the stop")
        } else {
            Trace.line("main", "work after the stop is refused: perform answered false")
        }
    }
}
