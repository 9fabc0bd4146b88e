// clock-check: `debounce(for:clock:)` of swift-async-algorithms on a loop's clock. Bursts of values sent 5 ms
// apart, bursts 200 ms apart, debounced by 50 ms on `worker.loop.clock`: the last value of each burst comes out,
// about 50 ms after it was sent, and the loop's timers (not the runtime's) measured the quiet time. Exits 1 if not.
import AsyncAlgorithms
import Glibc
import RunLoopKit
import Synchronization

let worker = try LoopThread(name: "debounce-clock")
let clock = worker.loop.clock
let timerFires = Atomic<Int>(0)
// Counts the loop's wake-ups by its timerfd: each debounce deadline is one of the loop's own timers.
let observer = LoopObserver(activities: .beforeTimers, repeats: true) { _, _ in timerFires.add(1, ordering: .relaxed) }
try worker.loop.add(observer, to: .common)

let (values, input) = AsyncStream<Int>.makeStream()
let sender = Task {
    for burst in 0..<3 {
        for index in 0..<5 {
            input.yield(burst * 10 + index)
            try await Task.sleep(for: .milliseconds(5), clock: clock)
        }
        try await Task.sleep(for: .milliseconds(200), clock: clock)
    }
    input.finish()
}

var debounced: [Int] = []
for await value in values.debounce(for: .milliseconds(50), clock: clock) {
    debounced.append(value)
    print("debounced: \(value)")
}
try await sender.value
observer.invalidate()
worker.stop()

guard debounced == [4, 14, 24] else {
    print("clock-check: FAIL: expected the last value of each burst, [4, 14, 24], got \(debounced)")
    exit(1)
}
guard timerFires.load(ordering: .relaxed) > 0 else {
    print("clock-check: FAIL: the loop ran no timers: the debounce did not sleep on the loop's clock")
    exit(1)
}
print("clock-check: PASS: \(debounced) out of 15 values, the quiet time measured by the loop's timers")
