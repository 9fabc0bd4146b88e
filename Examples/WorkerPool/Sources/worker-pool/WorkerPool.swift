import RunLoopKit

/// Runs jobs on a fixed set of `LoopThread`s, handing them out from `Loop.main` with at most `maxInFlight` handed out
/// and not yet finished.
///
/// Back-pressure: the producer (``submitWhileRoom()``) hands out jobs until that limit is reached, then pauses. Each
/// worker reports its result back to the main loop, which frees a place, and the producer resumes there. A job goes to
/// the worker with the fewest jobs in flight, so the work spreads evenly.
///
/// Use it from the main thread only: its state lives there, and results come back there, so nothing needs a lock.
@MainActor final class WorkerPool {
    /// What a run did.
    struct Summary {
        var completed = 0  // Jobs whose result came back.
        var primesCounted = 0  // The results, added up.
        var mostInFlight = 0  // The most jobs handed out and not yet finished at any time.
        var pauses = 0  // How often the producer stopped because the limit was reached.
        var completedPerWorker: [Int]
    }

    private let workers: [LoopThread]
    private let maxInFlight: Int
    private var waiting: [PrimeCount] = []
    private var inFlightPerWorker: [Int]
    private var summary: Summary

    /// Starts `workerCount` threads, each running its own loop until the pool stops it.
    init(workerCount: Int, maxInFlight: Int) throws {
        precondition(workerCount > 0 && maxInFlight > 0, "a pool needs a worker and room for a job")
        workers = try (1...workerCount).map { try LoopThread(name: "worker-\($0)") }
        self.maxInFlight = maxInFlight
        inFlightPerWorker = Array(repeating: 0, count: workerCount)
        summary = Summary(completedPerWorker: inFlightPerWorker)
    }

    /// Runs every job, then stops the workers (each thread is joined) and answers what happened.
    func run(_ jobs: [PrimeCount]) -> Summary {
        waiting = jobs.reversed()  // The next job is the last element: popLast() is cheap.
        submitWhileRoom()
        if inFlight > 0 {  // There were jobs.
            Loop.main.run()  // Until finished(_:on:) stops it after the last result.
        }
        for worker in workers { worker.stop() }
        return summary
    }

    private var inFlight: Int { inFlightPerWorker.reduce(0, +) }

    /// The producer: hands out jobs while fewer than `maxInFlight` are in flight.
    private func submitWhileRoom() {
        while inFlight < maxInFlight, let job = waiting.popLast() {
            // The least busy worker (there is at least one).
            let index = inFlightPerWorker.indices.min { inFlightPerWorker[$0] < inFlightPerWorker[$1] }!
            inFlightPerWorker[index] += 1
            summary.mostInFlight = max(summary.mostInFlight, inFlight)
            workers[index].perform {
                let primes = job.run()  // On the worker's thread.
                Loop.main.perform {
                    MainActor.assumeIsolated { self.finished(primes, on: index) }  // Back on the main thread.
                }
            }
        }
        if !waiting.isEmpty { summary.pauses += 1 }  // Full: the next result to come back resumes the producer.
    }

    /// A worker's result, on the main loop: frees its place, and resumes the producer or ends the run.
    private func finished(_ primes: Int, on index: Int) {
        inFlightPerWorker[index] -= 1
        summary.completed += 1
        summary.completedPerWorker[index] += 1
        summary.primesCounted += primes
        if waiting.isEmpty && inFlight == 0 {
            Loop.main.stop()
        } else {
            submitWhileRoom()
        }
    }
}
