/// An event-loop runtime the Swift peers' workloads run on: loops on their own threads, cross-thread posting and
/// one-shot timers.
public protocol PeerRuntime: Sendable {
    /// A running loop, usable from any thread.
    associatedtype Loop: Sendable
    /// A started timer, for cancelling it.
    associatedtype Timer

    /// Starts a loop on a new thread and answers it once it can take posts. Set-up only, never timed.
    func startLoop() -> Loop

    /// Queues `body` to run on `loop`'s thread and wakes the loop if it sleeps. From any thread.
    func post(to loop: Loop, _ body: @escaping @Sendable () -> Void)

    /// Starts a one-shot timer that calls `log.fire(index)` on `loop`'s thread at or after `deadline`
    /// (`CLOCK_MONOTONIC` nanoseconds), never before. On `loop`'s thread.
    func schedule(on loop: Loop, at deadline: Int64, log: FireLog, index: Int) -> Timer

    /// Cancels a timer that has not fired. On `loop`'s thread.
    func cancel(_ timer: Timer, on loop: Loop)
}

/// Where timers report firing: W3 records each timer's lateness, W4 counts fires (there must be none).
///
/// Touched on the loop's thread only; the main thread reads it after `done`, which orders the accesses.
public final class FireLog: @unchecked Sendable {
    /// Each timer's deadline (W3), or empty (W4).
    public let deadlines: UnsafeMutableBufferPointer<Int64>
    /// Each timer's fire time minus its deadline (W3), or empty (W4).
    public let lateness: UnsafeMutableBufferPointer<Int64>
    /// Timers fired so far.
    public var fired = 0
    /// Counted once when `expected` timers have fired.
    public let done = Latch()
    @usableFromInline let expected: Int

    /// A log for `count` timers whose lateness is recorded (`recording`), or that only counts fires.
    public init(count: Int, recording: Bool) {
        expected = count
        deadlines = .allocate(capacity: recording ? count : 0)
        deadlines.initialize(repeating: 0)
        lateness = .allocate(capacity: recording ? count : 0)
        lateness.initialize(repeating: 0)
    }

    /// On the loop's thread: timer `index` fires.
    @inlinable
    public func fire(_ index: Int) {
        if !lateness.isEmpty { lateness[index] = Clock.monotonic() - deadlines[index] }
        fired += 1
        if fired == expected { done.add() }
    }
}
