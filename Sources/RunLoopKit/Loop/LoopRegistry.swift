import CRunLoopShims
import Glibc
import RunLoopKitSystem
import Synchronization

/// The thread-keyed registry: each thread's loop lives in a pthread thread-specific slot, created on first use.
///
/// A slot belongs to one thread and is cleared by its destructor when the thread exits, so a later thread that
/// happens to get the same `pthread_t` can never be handed the dead thread's loop (the mistake of keying a
/// global dictionary by `pthread_t`). The main thread's loop also sits in a global, so other threads reach it. A
/// plain thread-local pointer mirrors the slot (CurrentLoop.h), so asking for the current loop is a load, not a call.
enum LoopRegistry {
    /// The slot; its destructor tears the thread's loop down when the thread exits.
    static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            crunloop_set_current_loop(nil)  // As pthread_getspecific answers in a destructor: no loop any more.
            let loop = Unmanaged<Loop>.fromOpaque(pointer).takeRetainedValue()
            loop.tearDownOnThreadExit()
        }
        require(status == 0, "RunLoopKit: pthread_key_create failed (\(status))")
        return key
    }()

    private static let mainLoop = Locked<Loop?>(nil)

    /// The calling thread's loop if it has one, without creating it.
    @inline(__always)
    static func currentIfPresent() -> Loop? {
        guard let pointer = crunloop_current_loop() else { return nil }
        return Unmanaged<Loop>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Whether `loop` is the calling thread's loop.
    @inline(__always)
    static func isCurrent(_ loop: Loop) -> Bool {
        if let pointer = crunloop_current_loop() {
            return pointer == Unmanaged.passUnretained(loop).toOpaque()
        }
        return isCurrentMainLoopNotYetInstalled(loop)
    }

    /// ``isCurrent(_:)``'s rare case, out of line: the main loop, created by another thread before the main thread
    /// touched it, asked about on the main thread.
    @inline(never)
    private static func isCurrentMainLoopNotYetInstalled(_ loop: Loop) -> Bool {
        if loop.isMain, ThreadIdentity.isMainThread, !loop.createdBeforeFork {
            install(loop)
            return true
        }
        return false
    }

    /// The calling thread's loop, created on first use.
    /// - Throws: ``LoopError/Code/systemCallFailed`` when it cannot be created (out of descriptors).
    static func current() throws(LoopError) -> Loop {
        if let loop = currentIfPresent() { return loop }
        let loop = try ThreadIdentity.isMainThread ? mainThrowing() : Loop.makeForCurrentThread()
        install(loop)
        return loop
    }

    /// The main thread's loop, created on first use from any thread; traps if it cannot be created.
    static func main() -> Loop {
        do {
            return try mainThrowing()
        } catch {
            trap("RunLoopKit: cannot create the main thread's loop: \(error)")
        }
    }

    /// The main thread's loop, created on first use from any thread.
    /// - Throws: ``LoopError/Code/systemCallFailed`` when it cannot be created (out of descriptors).
    private static func mainThrowing() throws(LoopError) -> Loop {
        try mainLoop.withLock { (loop: inout Loop?) throws(LoopError) -> Loop in
            if let loop, !loop.createdBeforeFork { return loop }  // A child of fork() gets a main loop of its own.
            let created = try Loop.makeForMainThread()
            loop = created
            return created
        }
    }

    private static func install(_ loop: Loop) {
        let pointer = Unmanaged.passRetained(loop).toOpaque()
        let status = pthread_setspecific(key, pointer)
        require(status == 0, "RunLoopKit: pthread_setspecific failed (\(status))")
        crunloop_set_current_loop(pointer)
    }
}
