import Glibc

/// A counting semaphore on Glibc's `sem_t`, for handing work between the soak's own threads.
final class Semaphore: @unchecked Sendable {
    // Unchecked Sendable: `sem_t` is made for sharing between threads; the pointer is freed only in deinit.
    private let semaphore: UnsafeMutablePointer<sem_t>

    /// A semaphore whose count starts at zero.
    init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Adds one to the count, waking a waiter.
    func post() {
        sem_post(semaphore)
    }

    /// Waits until the count is positive, then takes one; retries when a signal interrupts the wait (the soak sends
    /// itself signals all the time).
    func wait() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }
}
