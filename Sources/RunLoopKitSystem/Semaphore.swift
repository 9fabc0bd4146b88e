import Glibc

/// A counting semaphore on Glibc's `sem_t`, private to the process: one thread waits, another posts. The package's
/// one semaphore: `LoopThread` hands its start-up and `performAndWait` results over with it, loop-soak its own
/// threads' work.
///
/// A semaphore that cannot be made or posted is a broken invariant here, not an error to handle: `sem_init` with
/// a count of zero and `pshared` 0 and `sem_post` below `SEM_VALUE_MAX` do not fail, so each traps with the reason
/// if it does.
///
/// Threading: every method is safe from any thread.
package final class Semaphore: @unchecked Sendable {
    // Unchecked Sendable: `sem_t` is made for sharing between threads; the pointer never changes and is freed only
    // in deinit, when no other thread can hold a reference.
    private let semaphore: UnsafeMutablePointer<sem_t>

    /// A semaphore whose count starts at zero.
    ///
    /// The corresponding C call is `sem_init(3)`.
    package init() {
        semaphore = .allocate(capacity: 1)
        let status = sem_init(semaphore, 0, 0)
        require(status == 0, "RunLoopKit: sem_init failed (errno \(errno))")
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Adds one to the count, waking a waiter.
    ///
    /// The corresponding C call is `sem_post(3)`.
    package func post() {
        let status = sem_post(semaphore)
        require(status == 0, "RunLoopKit: sem_post failed (errno \(errno))")
    }

    /// Waits until the count is positive, then takes one; retries when a signal interrupts the wait.
    ///
    /// The corresponding C call is `sem_wait(3)`.
    package func wait() {
        do {
            _ = try retryingOnInterrupt("sem_wait") { sem_wait(semaphore) }
        } catch {
            trap("RunLoopKit: \(error)")
        }
    }
}
