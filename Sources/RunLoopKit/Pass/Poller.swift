import CRunLoopShims
import Glibc
import RunLoopKitSystem
import Synchronization

/// A loop's three kernel objects: one epoll set, the wake-up eventfd and the timerfd, all close-on-exec.
///
/// Threading: ``wakeIfSleeping()``, ``readyForHostUnlessWaiting()``, ``register(_:events:tag:)``,
/// ``withRegistrations(_:)`` and ``close()`` may be called from any thread; they hold ``lifecycle`` so a descriptor
/// is never used after it was closed (and its number reused). The same lock guards the descriptor sources' entries
/// of the epoll set (``EpollRegistrations``), so every change of one is made holding it. Everything else runs on the
/// loop's thread only.
///
/// In a child of `fork()` the descriptors of a poller made before the fork name the parent's kernel objects (the
/// epoll set is shared with the parent): those calls then never write the eventfd nor change the epoll set, and
/// never wait for ``lifecycle``, which a parent thread may have held at the fork.
final class Poller: Sendable {
    /// Tag of the wake-up eventfd's reports.
    static let wakeUpTag: UInt64 = 0
    /// Tag of the timerfd's reports.
    static let timerTag: UInt64 = 1
    /// Tag of the reports of Dispatch's main-queue eventfd (main loop only).
    static let mainQueueTag: UInt64 = 2
    /// Tags up to this one name the loop's own descriptors; descriptor sources' tags are all larger.
    static let lastLoopTag = mainQueueTag

    let epoll: CInt
    let wakeUpDescriptor: CInt
    let timerDescriptor: CInt

    /// The process generation the descriptors belong to (see ``ForkGuard``): a child of `fork()` never uses them.
    let forkGeneration = ForkGuard.generationForNewLoop()
    /// True while the loop sleeps, or is about to, in `epoll_wait`: wakers write the eventfd only then.
    let isWaiting = Atomic<Bool>(false)
    /// True once a host was given ``hostDescriptor()`` to wait on (``Loop/pollDescriptor``): a run of the loop's own
    /// then ends by making it readable again (see `Loop.run(mode:deadline:pollOnce:returnAfterSourceHandled:hostPass:)`).
    let isHosted = Atomic<Bool>(false)
    /// The host's set (``EpollRegistrations/hostSet``) once made, for a read without the lock; -1 before, and again
    /// once the descriptors are closed.
    private let hostSetDescriptor = Atomic<CInt>(-1)
    /// True once a waker has claimed the single eventfd write this sleep needs; cleared after waking.
    private let wakeUpPending = Atomic<Bool>(false)
    /// Whether the descriptors are still open, and the descriptor sources' entries of the epoll set. Held while a
    /// foreign thread uses the descriptors, while closing, and for every change of a source's entry.
    private let lifecycle: Locked<EpollRegistrations>

    /// How many times the eventfd was written, and the timerfd armed: the two costly calls the fast paths avoid.
    /// Relaxed counters bumped next to the system call (which costs far more); read by tests and benchmarks.
    let eventFDWrites = Atomic<Int>(0)
    let timerArms = Atomic<Int>(0)

    /// The absolute monotonic time the timerfd is armed for, `nil` when disarmed. Loop thread only.
    nonisolated(unsafe) private(set) var armedDeadline: Int64?

    init() throws(SystemError) {
        let epoll = try Epoll.create()
        let wakeUp: CInt
        do {
            wakeUp = try EventFD.create()
        } catch {
            FileDescriptorCalls.close(epoll)
            throw error
        }
        let timer: CInt
        do {
            timer = try TimerFD.create()
        } catch {
            FileDescriptorCalls.close(epoll)
            FileDescriptorCalls.close(wakeUp)
            throw error
        }
        do {
            try Epoll.add(epoll, wakeUp, events: [.input, .edgeTriggered], data: Self.wakeUpTag)
            try Epoll.add(epoll, timer, events: [.input, .edgeTriggered], data: Self.timerTag)
        } catch {
            FileDescriptorCalls.close(epoll)
            FileDescriptorCalls.close(wakeUp)
            FileDescriptorCalls.close(timer)
            throw error
        }
        self.epoll = epoll
        self.wakeUpDescriptor = wakeUp
        self.timerDescriptor = timer
        var registrations = EpollRegistrations(epoll: epoll)
        registrations.own = [
            .init(descriptor: wakeUp, events: [.input, .edgeTriggered], tag: Self.wakeUpTag),
            .init(descriptor: timer, events: [.input, .edgeTriggered], tag: Self.timerTag),
        ]
        self.lifecycle = Locked(registrations)
    }

    /// Closes the three descriptors; later wake-ups and registrations do nothing or fail cleanly.
    /// In a child of `fork()`, for a poller made before it, closes the child's copies (the parent's objects stay
    /// open in the parent), unless a parent thread held the lock at the fork: then they are left open.
    func close() {
        let closeOnce = { [self] (registrations: inout EpollRegistrations) in
            guard registrations.isOpen else { return }
            registrations.isOpen = false
            for watch in registrations.watches.values { watch.removal = .closed }
            registrations.watches.removeAll()
            hostSetDescriptor.store(-1, ordering: .releasing)
            if registrations.hostSet >= 0 { FileDescriptorCalls.close(registrations.hostSet) }
            if registrations.hostEntry >= 0 && registrations.hostEntry != epoll {
                FileDescriptorCalls.close(registrations.hostEntry)
            }
            FileDescriptorCalls.close(timerDescriptor)
            FileDescriptorCalls.close(wakeUpDescriptor)
            FileDescriptorCalls.close(epoll)
        }
        if ForkGuard.isStale(forkGeneration) {
            _ = lifecycle.withLockIfAvailable(closeOnce)
        } else {
            lifecycle.withLock(closeOnce)
        }
    }

    // MARK: Waking (any thread)

    /// Makes a sleeping loop return from `epoll_wait`; costs one atomic load when the loop is awake.
    ///
    /// Callers publish their work (a signal, a block) with a sequentially consistent atomic first; the loop
    /// sets ``isWaiting`` and then re-checks that work before it sleeps, so one of the two always sees the other.
    @inline(__always)
    func wakeIfSleeping() {
        guard isWaiting.load(ordering: .sequentiallyConsistent) else { return }
        guard !ForkGuard.isStale(forkGeneration) else { return }  // The parent's eventfd: never wake it from a child.
        guard !wakeUpPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        writeWakeUp()
    }

    /// Writes the wake-up eventfd, unless the loop's descriptors are closed (its thread exited). Any thread.
    @inline(__always)
    private func writeWakeUp() {
        lifecycle.withLock { registrations in
            guard registrations.isOpen else { return }
            eventFDWrites.add(1, ordering: .relaxed)
            do {
                try EventFD.signal(wakeUpDescriptor)
            } catch {
                trap("RunLoopKit: waking the loop through its eventfd failed: \(error)")
            }
        }
    }

    /// Makes ``epoll`` poll readable now, unless the loop has announced a sleep (then work sent from other threads
    /// does it): a host that starts waiting on the descriptor before the loop's first ``Loop/runPass(in:)`` wakes at
    /// once, and that pass readies the loop for the host's waits. Any thread.
    func readyForHostUnlessWaiting() {
        if !isHosted.load(ordering: .relaxed) { isHosted.store(true, ordering: .relaxed) }
        guard !isWaiting.load(ordering: .sequentiallyConsistent) else { return }
        guard !ForkGuard.isStale(forkGeneration) else { return }
        writeWakeUp()
    }

    // MARK: Hosting (any thread)

    /// The descriptor a host waits on (``Loop/pollDescriptor``): an epoll set holding ``epoll``, made the first time
    /// it is asked for, so a loop that no host embeds has none. It stays the same file while the loop's own set is
    /// rebuilt under it (``EpollRegistrations/rebuild()``), which a host keeping the descriptor in an epoll set of its
    /// own would otherwise lose: closing the old set takes it out of every epoll set. Answers -1 once the descriptors
    /// are closed (the loop's thread exited), and in a child of `fork()` for a poller made before it.
    ///
    /// - Throws: What `epoll_create1` or `epoll_ctl(EPOLL_CTL_ADD)` failed with (`EMFILE`, `ENOMEM`); a later call
    ///   tries again.
    func hostDescriptor() throws(SystemError) -> CInt {
        guard !ForkGuard.isStale(forkGeneration) else { return -1 }  // The parent's objects: never waited on here.
        let made = hostSetDescriptor.load(ordering: .acquiring)
        if made >= 0 { return made }
        return try lifecycle.withLock { (registrations) throws(SystemError) -> CInt in
            guard registrations.isOpen else { return -1 }
            let host = try registrations.makeHostSet()
            hostSetDescriptor.store(host, ordering: .releasing)
            return host
        }
    }

    // MARK: Registration (any thread)

    /// Adds one of the loop's own descriptors (Dispatch's main-queue eventfd) to the epoll set, tagged with `tag`.
    /// Descriptor sources' entries go through ``withRegistrations(_:)`` instead.
    func register(_ descriptor: CInt, events: Epoll.Events, tag: UInt64) throws(LoopError) {
        guard !ForkGuard.isStale(forkGeneration) else {  // The parent's epoll set: never change it from a child.
            throw LoopError(.loopTerminated, message: "the loop was created before fork(); use the child's own loop")
        }
        let result: Result<Void, SystemError>? = lifecycle.withLock {
            registrations -> Result<Void, SystemError>? in
            guard registrations.isOpen else { return nil }
            do throws(SystemError) {
                try Epoll.add(epoll, descriptor, events: events, data: tag)
                registrations.own.append(.init(descriptor: descriptor, events: events, tag: tag))
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case nil:
            throw LoopError(.loopTerminated, message: "the loop's thread has exited")
        case .failure(let error):
            throw LoopError(error, context: "watching descriptor \(descriptor)")
        case .success:
            return
        }
    }

    /// Takes one of the loop's own descriptors added by ``register(_:events:tag:)`` out of the epoll set again. Loop
    /// thread only (the main queue's eventfd, when a host serves the main queue itself).
    func unregister(_ descriptor: CInt) {
        _ = withRegistrations { registrations in registrations.removeOwn(descriptor) }
    }

    /// Runs `body` with the descriptor sources' entries of the epoll set, holding the lock every change of one
    /// takes; answers what `body` answers, or `nil` without running it once the set is closed (the loop's thread
    /// exited), or in a child of `fork()` for a poller made before it (the parent's set: never changed from a
    /// child, and its lock, which a parent thread may have held at the fork, is never waited for). Any thread.
    func withRegistrations<Result>(_ body: (inout EpollRegistrations) -> Result) -> Result? {
        guard !ForkGuard.isStale(forkGeneration) else { return nil }
        return lifecycle.withLock { registrations in
            guard registrations.isOpen else { return nil }
            return body(&registrations)
        }
    }

    // MARK: Loop thread only

    /// Waits for events (blocking when `block`, else polling) and answers how many `buffer` holds.
    ///
    /// On return the wake-up protocol is reset: ``isWaiting`` is false and a pending eventfd write is drained
    /// if the eventfd was among the events.
    func wait(into buffer: UnsafeMutableBufferPointer<epoll_event>, block: Bool) -> Int {
        let count: Int
        do {
            count = try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: block ? -1 : 0)
        } catch {
            trap("RunLoopKit: epoll_wait on the loop's own set failed: \(error)")
        }
        return count
    }

    /// Called right after waking: clears the wake-up state.
    ///
    /// The eventfd is not read: it is edge-triggered, so `epoll_wait` reports each later write anyway (see
    /// ``EventFD/signal(_:)``), and a wake-up costs the woken loop no system call beyond its `epoll_wait`.
    func finishWaiting() {
        isWaiting.store(false, ordering: .sequentiallyConsistent)
        wakeUpPending.store(false, ordering: .releasing)
    }

    /// Arms the timerfd for `deadline` unless it is already armed for that time or earlier and still pending.
    ///
    /// `timerfd_settime` is costly (12-14 µs when it becomes the CPU's earliest timer), so an armed expiry that
    /// is earlier than needed is left alone: it wakes the loop, which then re-arms for the real deadline.
    func arm(for deadline: Int64, now: Int64) {
        if let armed = armedDeadline, armed <= deadline, armed > now { return }
        timerArms.add(1, ordering: .relaxed)
        do {
            try TimerFD.arm(timerDescriptor, atMonotonicNanoseconds: deadline)
        } catch {
            trap("RunLoopKit: timerfd_settime on the loop's own timerfd failed: \(error)")
        }
        armedDeadline = deadline
    }

    /// Disarms the timerfd if a run of the loop's own armed it, so that it cannot make ``epoll`` (and a host's set)
    /// readable, also with an expiry that came after the last `epoll_wait`: for a host that times the loop's timers
    /// itself (``Loop/runHostTimedPass(in:hostServesMainQueue:)``). No system call when it is disarmed already. Loop
    /// thread only.
    func disarm() {
        guard armedDeadline != nil else { return }
        armedDeadline = nil
        timerArms.add(1, ordering: .relaxed)
        do {
            try TimerFD.disarm(timerDescriptor)
        } catch {
            trap("RunLoopKit: timerfd_settime on the loop's own timerfd failed: \(error)")
        }
    }
}
