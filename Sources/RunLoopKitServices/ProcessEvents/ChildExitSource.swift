import Glibc
import RunLoopKit
import RunLoopKitSystem

/// Calls a handler once, on the loop's thread, when a given child process exits, with how it ended.
///
/// Linux mechanism: the source opens a pidfd for the child (`pidfd_open`, Linux 5.3+) and watches it with a
/// ``FileDescriptorSource``; the kernel makes a pidfd readable when its process exits. The source then reaps the
/// child with `waitid(P_PIDFD, ..., WEXITED)` (Linux 5.4+), so no zombie is left, and calls the handler with the
/// ``ChildExitStatus``. A child that exited before the source was created or added still fires, on the first pass
/// that runs one of the source's modes. If something else reaped the child first (a `waitpid(-1, ...)` loop, a
/// `SIGCHLD` handler, `SIGCHLD` ignored), the handler still runs, with ``ChildExitStatus/reapedElsewhere``.
///
/// The pidfd is close-on-exec (the kernel sets the flag), belongs to the source and is closed once nothing can use
/// it: at once when an unscheduled source is invalidated, otherwise right after the loop has dropped the source
/// (after firing or invalidation, at the loop's next pass from another thread), or with its loop when the loop's
/// thread exits first. A source never fires twice: it is invalid from the moment its handler is called.
///
/// Create the source before anything else could reap the child: a reaped child's pid can be reused, and then
/// `init` refuses it (not a child) or, worse, watches the newer process if it is also our child.
///
/// Threading: `init`, ``Loop/add(_:to:)-(ChildExitSource,_)``, ``Loop/remove(_:from:)-(ChildExitSource,_)``,
/// ``invalidate()`` and ``isValid`` are safe from any thread; the handler runs on the loop's thread and may
/// invalidate or inspect its source. A source belongs to at most one loop, in any number of its modes; while
/// scheduled, the loop keeps it alive (the caller need not hold it).
public final class ChildExitSource: Sendable {
    /// The watched child's process id.
    public let pid: pid_t
    /// Among descriptors ready in the same pass, lower orders are handled first.
    public let order: Int

    /// Where the source stands; see ``Registration``.
    private let registration: Locked<Registration>

    /// The three states of a source, and what it holds in each.
    ///
    /// The descriptor source's handler holds the relay, the relay holds the pidfd and (while an add is in flight
    /// or done) this source. So while unscheduled this source holds the descriptor source strongly, and once added
    /// only weakly: the loop keeps the chain alive, and when the loop lets go (fired, invalidated, thread exited)
    /// the whole chain is freed and the pidfd closed, with no reference cycle left behind.
    private enum Registration: Sendable {
        /// Not yet in a loop; `addsInFlight` counts `add` calls between their start and their outcome.
        case unscheduled(FileDescriptorSource, ChildExitRelay, addsInFlight: Int)
        /// Added to a loop, which owns the descriptor source now.
        case scheduled(WeakDescriptorSource)
        /// Fired or invalidated.
        case finished
    }

    /// Creates a source for the child process `pid`, not yet in any loop.
    ///
    /// - Parameters:
    ///   - pid: A child of this process (spawned by any of its threads) that nothing else reaps.
    ///   - order: Among descriptors ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called once on the loop's thread, with the source (already invalid) and how the child ended;
    ///     the child has been reaped when it runs.
    /// - Throws: ``LoopError/Code/invalidArgument`` when `pid` is not a live or exited-but-unreaped child of this
    ///   process (`errno` `ECHILD`: not our child; `ESRCH`: no such process, e.g. already reaped; `EINVAL`: not a
    ///   process id); ``LoopError/Code/unsupported`` when the kernel lacks `pidfd_open` (before Linux 5.3, or a
    ///   seccomp filter blocks it) or `waitid(P_PIDFD)` (before 5.4); ``LoopError/Code/systemCallFailed`` when
    ///   descriptors run out (`EMFILE`, `ENFILE`).
    public init(
        pid: pid_t,
        order: Int = 0,
        handler: @escaping @Sendable (ChildExitSource, ChildExitStatus) -> Void
    ) throws(LoopError) {
        guard pid > 0 else {
            throw LoopError(.invalidArgument, errno: EINVAL, message: "pid \(pid) is not a child process id")
        }
        let pidfd: CInt
        do {
            pidfd = try PidFD.open(pid)
        } catch {
            throw Self.openError(error, pid: pid)
        }
        // The relay owns the pidfd from here on: every early exit below closes it by freeing the relay.
        let relay = ChildExitRelay(pidfd: pidfd, handler: handler)
        do {
            _ = try PidFD.peek(pidfd)  // Refuses a process that is not our child; reaps nothing.
        } catch {
            throw Self.checkError(error, pid: pid)
        }
        let descriptorSource = try FileDescriptorSource(descriptor: pidfd, order: order) { events in
            guard !events.contains(.invalid) else { return }  // The pidfd is ours: only a refused change gets here.
            relay.descriptorReady()
        }
        self.pid = pid
        self.order = order
        registration = Locked(.unscheduled(descriptorSource, relay, addsInFlight: 0))
    }

    /// Whether the source can still be added and fire: false once it fired, was invalidated, or its loop's thread
    /// exited before the child did. Safe from any thread.
    public var isValid: Bool {
        registration.withLock { state in
            switch state {
            case .unscheduled: true
            case .scheduled(let weak): weak.source?.isValid ?? false
            case .finished: false
            }
        }
    }

    /// Stops watching for good, without reaping the child (reap it yourself, e.g. with `waitpid`). Safe from any
    /// thread; invalidating twice does nothing.
    ///
    /// After it returns no new handler call starts (one that already started finishes). The pidfd is closed at once
    /// when the source was never added or when called on the loop's thread; from another thread, when the loop
    /// applies the invalidation (before its next pass).
    public func invalidate() {
        let descriptorSource = registration.withLock { state -> FileDescriptorSource? in
            defer { state = .finished }
            return Self.descriptorSource(in: state)
        }
        descriptorSource?.invalidate()
    }

    // MARK: Scheduling (for Loop's add/remove/contains)

    /// Adds the source's descriptor source to `mode` of `loop`; the loop keeps the source alive from then on.
    func schedule(on loop: Loop, in mode: Loop.Mode) throws(LoopError) {
        let descriptorSource = registration.withLock { state -> FileDescriptorSource? in
            if case .unscheduled(let source, let relay, let addsInFlight) = state {
                state = .unscheduled(source, relay, addsInFlight: addsInFlight + 1)
                relay.attach(self)  // Before the add: the loop may handle the descriptor at once.
            }
            return Self.descriptorSource(in: state)
        }
        guard let descriptorSource else {
            throw LoopError(.invalidated, message: "a child-exit source that fired or was invalidated cannot be added")
        }
        do {
            try loop.add(descriptorSource, to: mode)
        } catch {
            registration.withLock { state in
                guard case .unscheduled(let source, let relay, let addsInFlight) = state else { return }
                state = .unscheduled(source, relay, addsInFlight: addsInFlight - 1)
                if addsInFlight == 1 { relay.detach() }  // Never scheduled: no cycle may keep the pidfd open.
            }
            throw error
        }
        registration.withLock { state in
            guard case .unscheduled(let source, _, _) = state else { return }
            state = .scheduled(WeakDescriptorSource(source: source))
        }
    }

    /// The descriptor source while the source can still fire, else `nil`.
    var scheduledDescriptorSource: FileDescriptorSource? {
        registration.withLock { Self.descriptorSource(in: $0) }
    }

    private static func descriptorSource(in state: Registration) -> FileDescriptorSource? {
        switch state {
        case .unscheduled(let source, _, _): source
        case .scheduled(let weak): weak.source
        case .finished: nil
        }
    }

    // MARK: Firing

    /// The pidfd became readable: the child exited. Reaps it and calls `handler`, unless invalidated first.
    /// Loop thread only (called from the descriptor source's handler).
    func childExited(pidfd: CInt, handler: @Sendable (ChildExitSource, ChildExitStatus) -> Void) {
        // Look before reaping, so that an invalidation winning the claim below leaves the child for its owner.
        do {
            guard try PidFD.peek(pidfd) != nil else { return }  // Not exited after all: keep watching.
        } catch {
            guard error.errno == ECHILD else { Self.trapOnWaitFailure(error) }  // ECHILD: reaped elsewhere, so exited.
        }
        let claimed = registration.withLock { state -> FileDescriptorSource? in
            defer { state = .finished }
            return Self.descriptorSource(in: state)
        }
        guard let descriptorSource = claimed else { return }
        descriptorSource.invalidate()  // On the loop's thread: out of the epoll set now; the pidfd closes after.
        let status: ChildExitStatus
        do {
            status = try PidFD.reap(pidfd).map(ChildExitStatus.init) ?? .reapedElsewhere
        } catch {
            guard error.errno == ECHILD else { Self.trapOnWaitFailure(error) }
            status = .reapedElsewhere
        }
        handler(self, status)
    }

    /// `waitid` on our own pidfd can only fail with `ECHILD` once `init` has checked it; anything else is a bug.
    private static func trapOnWaitFailure(_ error: SystemError) -> Never {
        trap("RunLoopKit: waitid on a child-exit source's pidfd: \(error)")
    }

    // MARK: Errors

    private static func openError(_ error: SystemError, pid: pid_t) -> LoopError {
        switch error.errno {
        case ENOSYS, EPERM:
            LoopError(
                .unsupported, errno: error.errno,
                message: "pidfd_open is unavailable (Linux 5.3+ is needed, or a seccomp filter blocks it): \(error)")
        case ESRCH:
            LoopError(
                .invalidArgument, errno: ESRCH, message: "no process \(pid) (did it exit and get reaped already?)")
        case EINVAL:
            LoopError(.invalidArgument, errno: EINVAL, message: "\(pid) is not a process id (a thread id?)")
        default:
            LoopError(error, context: "opening a pidfd for process \(pid)")
        }
    }

    private static func checkError(_ error: SystemError, pid: pid_t) -> LoopError {
        switch error.errno {
        case ECHILD:
            LoopError(.invalidArgument, errno: ECHILD, message: "process \(pid) is not a child of this process")
        case EINVAL:
            LoopError(
                .unsupported, errno: EINVAL, message: "waitid(P_PIDFD) is unavailable (Linux 5.4+ is needed)")
        default:
            LoopError(error, context: "checking process \(pid)")
        }
    }
}
