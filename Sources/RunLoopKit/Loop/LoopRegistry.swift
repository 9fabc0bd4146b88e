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
            crunloop_set_virtual_clock(nil)
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
        crunloop_set_virtual_clock(loop.control.virtualClock.map { Unmanaged.passUnretained($0).toOpaque() })
    }

    // MARK: Virtual time

    /// Makes a loop on `clock` the calling thread's loop: a ``LoopThread`` made with
    /// ``LoopThread/Options/virtualTime``, whose thread has no loop yet.
    /// - Throws: ``LoopError/Code/systemCallFailed`` when it cannot be created (out of descriptors).
    static func installVirtual(_ clock: Loop.VirtualClock) throws(LoopError) -> Loop {
        require(currentIfPresent() == nil, "RunLoopKit: the thread has a loop already; it cannot become virtual")
        let loop = try Loop.makeVirtual(clock)
        install(loop)
        return loop
    }

    /// Runs `body` with a new loop on `clock` as the calling thread's loop (``Loop/current``, ``Loop/Instant/now``),
    /// then tears that loop down as a thread's exit would and gives the thread its former loop back
    /// (``Loop/withVirtualTime(startingAt:advancesWhenIdle:_:)``). On the main thread the stand-in is the current
    /// loop but not ``Loop/main``, which stays the real main loop and is not the thread's while `body` runs.
    static func withVirtualLoop<Result, Failure: Error>(
        _ clock: Loop.VirtualClock, _ body: (Loop) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        if let former = currentIfPresent() {
            require(
                former.runStack.depth == 0,
                "RunLoopKit: Loop.withVirtualTime called inside a run of the thread's loop: its loop cannot be "
                    + "replaced while it runs; call it outside any run")
        }
        let formerPointer = pthread_getspecific(key)  // Retained by the slot; kept while the virtual loop stands in.
        let formerClock = crunloop_virtual_clock()
        let loop: Loop
        do {
            loop = try Loop.makeVirtual(clock)
        } catch {
            trap("RunLoopKit: cannot create a loop on virtual time: \(error)")
        }
        install(loop)
        defer {
            let status = pthread_setspecific(key, formerPointer)
            require(status == 0, "RunLoopKit: pthread_setspecific failed (\(status))")
            crunloop_set_current_loop(formerPointer)
            crunloop_set_virtual_clock(formerClock)
            Unmanaged<Loop>.fromOpaque(Unmanaged.passUnretained(loop).toOpaque()).release()  // The slot's retain.
            loop.tearDownOnThreadExit()
        }
        return try body(loop)
    }
}
