import Glibc
import RunLoopKitSystem

extension LoopThread {
    /// A counting semaphore on Glibc's `sem_t`: one thread waits, another posts. Safe from any thread.
    ///
    /// Used to hand a result from the worker to a waiting thread (start-up,
    /// ``LoopThread/performAndWait(in:_:)-([Loop.Mode],_)``).
    final class Semaphore: @unchecked Sendable {
        // Unchecked Sendable: `sem_t` is made for sharing between threads; the pointer never changes and is freed
        // only in deinit, when no other thread can hold a reference.
        private let semaphore: UnsafeMutablePointer<sem_t>

        init() {
            semaphore = .allocate(capacity: 1)
            let status = sem_init(semaphore, 0, 0)
            require(status == 0, "RunLoopKit: sem_init failed (errno \(errno))")
        }

        deinit {
            sem_destroy(semaphore)
            semaphore.deallocate()
        }

        /// Adds one to the count, waking a waiter. The corresponding C call is `sem_post(3)`.
        func post() {
            let status = sem_post(semaphore)
            require(status == 0, "RunLoopKit: sem_post failed (errno \(errno))")
        }

        /// Waits until the count is positive, then takes one; retries on `EINTR`. The corresponding C call is
        /// `sem_wait(3)`.
        func wait() {
            while sem_wait(semaphore) != 0 {
                let error = errno
                require(error == EINTR, "RunLoopKit: sem_wait failed (errno \(error))")
            }
        }
    }
}
