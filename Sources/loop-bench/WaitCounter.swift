import Glibc

/// A counter threads can wait on: a latch (wait for 1), a start gate, or a "n threads are ready" count.
///
/// Built on a pthread mutex and a condition variable on `CLOCK_MONOTONIC`, so waiting costs no CPU (W5 measures
/// the process's CPU time while the main thread waits). The mutex also orders memory: what a thread wrote before
/// ``increment()`` is visible to a thread whose ``wait(for:timeout:)`` returned.
///
/// Threading: every method is safe from any thread.
final class WaitCounter: @unchecked Sendable {  // Unchecked: `value` is only touched with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var value = 0

    /// Creates a counter at zero.
    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Adds one and wakes every waiter.
    func increment() {
        pthread_mutex_lock(mutex)
        value += 1
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until the counter reaches `target` or `timeout` passes.
    ///
    /// The one place the harness blocks, under a stable name for profiles.
    /// - Returns: `false` on time-out.
    @inline(never)
    @discardableResult
    func wait(for target: Int = 1, timeout: Duration = .seconds(300)) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline = Clock.monotonic() + seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while value < target {
            if pthread_cond_timedwait(condition, mutex, &spec) == ETIMEDOUT { return value >= target }
        }
        return true
    }
}
