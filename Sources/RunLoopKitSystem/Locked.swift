import Glibc

/// A value guarded by a `pthread_mutex_t`: the library's one lock type.
///
/// Why not `Synchronization.Mutex`: on Linux it is built on raw futex calls inside the (uninstrumented) standard
/// library, so ThreadSanitizer cannot see its acquire and release and reports every value it guards as a race.
/// `pthread_mutex_lock` is intercepted by the sanitizers, so this lock keeps `swift test --sanitize=thread`
/// meaningful. Uncontended, both cost about the same (one atomic compare-and-swap to lock, one to unlock); the
/// library only locks off the loop's fast path (cross-thread posts, lifecycle changes, helpers' queues).
///
/// Threading: safe from any thread. The body of ``withLock(_:)`` must not call back into the same lock (the mutex
/// is not recursive) and should be short: it runs with the lock held.
public final class Locked<Value> {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Only touched with the mutex held, which already makes every access exclusive: no dynamic check is needed.
    @exclusivity(unchecked) @usableFromInline var value: Value

    /// A lock guarding `value`.
    ///
    /// - Parameter spinsWhenContended: Whether a thread that finds the lock held spins a little (glibc's adaptive
    ///   mutex, `PTHREAD_MUTEX_ADAPTIVE_NP`: up to 100 tries, fewer when spinning has not paid lately) before
    ///   sleeping in the kernel. For a lock that several threads take at a high rate and hold for a few dozen
    ///   instructions, as a loop's inbox: a holder on another CPU lets go sooner than a sleep and a wake-up take.
    ///   Default `false`: a plain mutex, which sleeps at once.
    public init(_ value: Value, spinsWhenContended: Bool = false) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = spinsWhenContended ? Self.initializeSpinning(mutex) : pthread_mutex_init(mutex, nil)
        require(status == 0, "RunLoopKit: pthread_mutex_init failed (\(status))")
    }

    /// Initialises `mutex` as glibc's adaptive mutex; answers `pthread_mutex_init`'s status.
    private static func initializeSpinning(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) -> CInt {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        pthread_mutexattr_settype(&attributes, CInt(PTHREAD_MUTEX_ADAPTIVE_NP))
        return pthread_mutex_init(mutex, &attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value and answers what it returns.
    @inlinable @inline(__always)
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        // Unlocked on each path rather than in a `defer`, which another module calls as a function of its own.
        do {
            let result = try body(&value)
            pthread_mutex_unlock(mutex)
            return result
        } catch {
            pthread_mutex_unlock(mutex)
            throw error
        }
    }

    /// Runs `body` with exclusive access to the value if the lock is free now, answering `nil` without waiting
    /// when it is held. For a child of `fork()`, where a lock a parent thread held at the fork stays held for good.
    @inlinable
    public func withLockIfAvailable<Result>(_ body: (inout Value) -> Result) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        let result = body(&value)
        pthread_mutex_unlock(mutex)
        return result
    }

    /// Runs `body` with exclusive access to the value, handing it `argument` to consume (say, to append), so the
    /// argument is moved in rather than copied as a captured value would be.
    @inlinable @inline(__always)
    public func withLock<Argument: ~Copyable, Result>(
        consuming argument: consuming Argument,
        _ body: (inout Value, consuming Argument) -> Result
    ) -> Result {
        pthread_mutex_lock(mutex)
        let result = body(&value, argument)
        pthread_mutex_unlock(mutex)
        return result
    }
}

/// Sendable when its value is: the mutex orders every access, so sharing the box shares the value.
extension Locked: @unchecked Sendable where Value: Sendable {}
