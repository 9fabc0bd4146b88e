import Glibc
import RunLoopKit
import RunLoopKitSystem

/// Calls a handler once, on the loop's thread, when a given child process exits, with how it ended.
///
/// Linux mechanism: the source opens a pidfd for the child (`pidfd_open`, Linux 5.3+), the descriptor its loop watches
/// (a `DescriptorBackedSource`); the kernel makes a pidfd readable when its process exits. The source then reaps the
/// child with `waitid(P_PIDFD, ..., WEXITED)` (Linux 5.4+), so no zombie is left, and calls the handler with the
/// ``ChildExitStatus``. A child that exited before the source was created or added still fires, on the first pass
/// that runs one of the source's modes. If something else reaped the child first (a `waitpid(-1, ...)` loop, a
/// `SIGCHLD` handler, `SIGCHLD` ignored), the handler still runs, with ``ChildExitStatus/reapedElsewhere``.
///
/// The pidfd is close-on-exec (the kernel sets the flag) and belongs to the source: it is closed once the source fired
/// or was invalidated (and no call under way on the loop's thread uses it), or when the source is released. A source never fires twice: it is invalid from
/// the moment its handler is called.
///
/// Create the source before anything else could reap the child: a reaped child's pid can be reused, and then
/// `init` refuses it (not a child) or, worse, watches the newer process if it is also our child.
///
/// Threading: `init`, the loop's `add`/`remove`, `LoopItem.invalidate()` and `LoopItem.isValid` are safe from any
/// thread; the handler runs on the loop's thread and may invalidate or inspect its source. A source belongs to at most
/// one loop, in any number of its modes; while scheduled, the loop keeps it alive (the caller need not hold it).
public final class ChildExitSource: DescriptorBackedSource, @unchecked Sendable {  // Unchecked: as its base.
    /// The watched child's process id.
    public let pid: pid_t

    let handler: @Sendable (ChildExitSource, ChildExitStatus) -> Void

    /// Creates a source for the child process `pid`, not yet in any loop.
    ///
    /// - Parameters:
    ///   - pid: A child of this process (spawned by any of its threads) that nothing else reaps.
    ///   - order: Among descriptor-backed sources ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called once on the loop's thread, with the source (already invalid) and how the child ended;
    ///     the child has been reaped when it runs.
    /// - Throws: `LoopError.Code.invalidArgument` when `pid` is not a live or exited-but-unreaped child of this
    ///   process (`errno` `ECHILD`: not our child; `ESRCH`: no such process, e.g. already reaped; `EINVAL`: not a
    ///   process id); `LoopError.Code.unsupported` when the kernel lacks `pidfd_open` (before Linux 5.3, or a
    ///   seccomp filter blocks it) or `waitid(P_PIDFD)` (before 5.4); `LoopError.Code.systemCallFailed` when
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
        do {
            _ = try PidFD.peek(pidfd)  // Refuses a process that is not our child; reaps nothing.
        } catch {
            FileDescriptorCalls.close(pidfd)
            throw Self.checkError(error, pid: pid)
        }
        self.pid = pid
        self.handler = handler
        try super.init(
            descriptor: pidfd, events: .readable, order: order, ownsDescriptor: true,
            callout: { source, events in unsafeDowncast(source, to: ChildExitSource.self).childReady(events) })
    }

    // MARK: Firing

    /// The pidfd became readable: the child exited. Reaps it and calls `handler`, unless invalidated first.
    /// Loop thread only.
    private func childReady(_ events: Events) {
        guard !events.contains(.invalid), isValid else { return }  // The pidfd is ours: only a refused change fails.
        let reaped = withOwnedDescriptor { (pidfd: CInt) -> ChildExitStatus? in
            // Look before reaping, so that an invalidation winning the claim below leaves the child for its owner.
            do throws(SystemError) {
                guard try PidFD.peek(pidfd) != nil else { return nil }  // Not exited after all: keep watching.
            } catch {
                guard error.errno == ECHILD else { Self.trapOnWaitFailure(error) }  // ECHILD: reaped elsewhere.
            }
            guard markInvalid() else { return nil }  // Claimed here, or invalidated on another thread first.
            do throws(SystemError) {
                return try PidFD.reap(pidfd).map(ChildExitStatus.init) ?? .reapedElsewhere
            } catch {
                guard error.errno == ECHILD else { Self.trapOnWaitFailure(error) }
                return .reapedElsewhere
            }
        }
        guard let status = reaped ?? nil else { return }
        finishInvalidation()  // On the loop's thread: out of the epoll set and every mode now; the pidfd closes.
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
            LoopError(systemCall: error, context: "opening a pidfd for process \(pid)")
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
            LoopError(systemCall: error, context: "checking process \(pid)")
        }
    }
}
