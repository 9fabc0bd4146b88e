import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// Helpers shared by the async convenience tests.
enum AsyncSupport {
    /// What a loop holds: items per mode, descriptors in its epoll set, timers scheduled or parked. Two equal
    /// footprints before and after a wait mean the wait left nothing behind.
    struct Footprint: Equatable, CustomStringConvertible {
        var sources = 0
        var descriptorSources = 0
        var timers = 0
        var registrations = 0
        var parkedDescriptors = 0
        var scheduledTimers = 0
        var parkedTimers = 0
        /// Descriptors in the loop's epoll set, as the kernel lists them (`/proc/self/fdinfo` of the epoll fd).
        var epollEntries = 0

        var description: String {
            "sources \(sources), descriptor sources \(descriptorSources), timers \(timers), registrations "
                + "\(registrations), parked descriptors \(parkedDescriptors), scheduled timers \(scheduledTimers), "
                + "parked timers \(parkedTimers), epoll entries \(epollEntries)"
        }
    }

    /// The footprint of `loop`, taken on its thread (the loop's item state is confined to it). Loop thread only.
    static func footprint(of loop: Loop) -> Footprint {
        loop.applyChanges()
        var footprint = Footprint()
        for mode in loop.allModes {
            guard let state = loop.existingMode(named: mode) else { continue }
            footprint.sources += state.sources.count
            footprint.descriptorSources += state.descriptorSources.count
            footprint.timers += state.timers.count
        }
        footprint.registrations = loop.descriptorTable.registered.count
        footprint.parkedDescriptors = loop.descriptorTable.parked.count
        footprint.scheduledTimers = loop.timerTable.scheduledTimerCount
        footprint.parkedTimers = loop.timerTable.parkedTimerCount
        footprint.epollEntries = epollEntryCount(loop.poller.epoll)
        return footprint
    }

    /// The footprint of a worker's loop, taken on the worker.
    static func footprint(of thread: LoopThread) -> Footprint {
        try! thread.performAndWait { footprint(of: thread.loop) }
    }

    /// Waits (with a deadline) until the worker's footprint is `expected`; answers whether it got there.
    static func footprint(of thread: LoopThread, becomes expected: Footprint) async -> Bool {
        await eventually { footprint(of: thread) == expected }
    }

    /// Polls `condition` until it holds or `timeout` passes, suspending (not blocking the thread) between polls,
    /// so the tasks under test get the cooperative pool's threads; answers whether it held. Never a fixed sleep.
    ///
    /// The bound is generous because it returns as soon as the condition holds: under a sanitizer on two cores,
    /// synchronous tests running beside this one can hold the cooperative pool's threads for tens of seconds, and a
    /// task under test then starts that late (seen once: 41 s, under ThreadSanitizer, against a 10 s bound).
    static func eventually(timeout: Duration = .seconds(120), _ condition: () -> Bool) async -> Bool {
        await awaitCondition(timeout: timeout, every: .microseconds(500), condition)
    }

    /// The number of blocks the worker's loop holds for a later pass (read from a source's perform, outside the
    /// pass's block step, which takes the list while it runs blocks).
    static func pendingBlockCount(of thread: LoopThread) -> Int {
        let count = Box<Int>()
        let probe = LoopSource { _ in count.value = Loop.current.blocks.count }
        try! thread.loop.add(probe)
        probe.signal()
        _ = waitUntil { count.value != nil }
        probe.invalidate()
        return count.value ?? -1
    }

    /// Makes the worker run `mode` once without sleeping, from a source's perform (outside the block step, so
    /// blocks waiting for `mode` are served).
    static func runOnce(_ mode: Loop.Mode, on thread: LoopThread) {
        let done = Box<Bool>()
        let probe = LoopSource { _ in
            Loop.current.run(in: mode, for: .zero)
            done.value = true
        }
        try! thread.loop.add(probe)
        probe.signal()
        _ = waitUntil { done.value != nil }
        probe.invalidate()
    }

    /// Reports a measured figure, for the report and the docs (printed under `RUNLOOPKIT_TEST_FIGURES=1`, see
    /// ``TestFigures``).
    static func report(_ line: String) {
        TestFigures.report("[async] \(line)")
    }

    /// A loop whose thread has exited (so the loop was torn down).
    static func deadLoop() -> Loop {
        let (loop, thread) = startLoopThread { _ in }
        thread.join()
        return loop
    }

    /// Cancels the current task, so the next call sees a task cancelled before it began.
    static func cancelCurrentTask() {
        withUnsafeCurrentTask { $0?.cancel() }
    }

    /// Awaits `task`, failing the test instead of hanging if it does not finish within `timeout`.
    static func result<Success: Sendable>(
        of task: Task<Success, any Error>,
        within timeout: Duration = .seconds(20)
    ) async -> Result<Success, any Error>? {
        let finished = Atomic<Bool>(false)
        let watchdog = Task {
            try? await Task.sleep(for: timeout)
            if !finished.load(ordering: .acquiring) {
                Issue.record("a task did not finish within \(timeout)")
            }
        }
        let result = await task.result
        finished.store(true, ordering: .releasing)
        watchdog.cancel()
        return result
    }

    /// An error the tests throw from work, to see it come back.
    struct WorkError: Error, Equatable {
        let value: Int
    }
}

/// Whether `result` failed with `CancellationError`.
func isCancellation<Success>(_ result: Result<Success, any Error>?) -> Bool {
    guard case .failure(let error) = result else { return false }
    return error is CancellationError
}

/// The `LoopError` code `result` failed with, if any.
func loopErrorCode<Success>(_ result: Result<Success, any Error>?) -> LoopError.Code? {
    guard case .failure(let error) = result else { return nil }
    return (error as? LoopError)?.code
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing call.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
