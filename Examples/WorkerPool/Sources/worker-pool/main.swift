// worker-pool: jobs handed out from the main thread's loop to a pool of LoopThreads, never more than a few in flight
// at once; each result comes back to the main loop, which then hands out the next job. See README.md.
import RunLoopKit

let jobs = (1...200).map { PrimeCount(below: 5_000 + 100 * $0) }
let workerCount = 4
let maxInFlight = 8
let pool = try WorkerPool(workerCount: workerCount, maxInFlight: maxInFlight)
print("worker-pool: \(jobs.count) jobs for \(workerCount) workers, at most \(maxInFlight) in flight")

let clock = ContinuousClock()
let start = clock.now
let summary = pool.run(jobs)  // Runs Loop.main until every result is in, then stops the workers.
let milliseconds = (clock.now - start) / .milliseconds(1)

print("done in \(Int(milliseconds)) ms: \(summary.completed) jobs, \(summary.primesCounted) primes counted in all")
print("at most \(summary.mostInFlight) jobs in flight; the producer paused \(summary.pauses) times when full")
for (index, count) in summary.completedPerWorker.enumerated() {
    print("worker-\(index + 1): \(count) jobs")
}
print("workers stopped")

/// A job: counts the primes below a number, by trial division, to keep a CPU busy for a while.
struct PrimeCount: Sendable {
    let below: Int

    func run() -> Int {
        (2..<below).count(where: Self.isPrime)
    }

    private static func isPrime(_ number: Int) -> Bool {
        var divisor = 2
        while divisor * divisor <= number {
            if number % divisor == 0 { return false }
            divisor += 1
        }
        return true
    }
}
