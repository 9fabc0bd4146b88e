import CRunLoopShims
import Glibc

/// The process-descriptor calls a child-exit source needs, each wrapped once.
///
/// A pidfd is a descriptor that refers to one process for as long as it is open, even after the process has
/// exited and its pid has been reused: it becomes readable when the process exits, and `waitid(P_PIDFD, ...)` reaps
/// exactly that process. Knows nothing of loops.
package enum PidFD {
    /// How a child process ended, as `waitid(2)` reports it.
    package struct Exit: Equatable {
        /// `CLD_EXITED`, `CLD_KILLED` or `CLD_DUMPED`.
        package let code: CInt
        /// The exit code for `CLD_EXITED`, otherwise the terminating signal.
        package let status: CInt
    }

    /// Opens a close-on-exec descriptor referring to process `pid` (the kernel always sets close-on-exec on it).
    ///
    /// Fails with `ENOSYS` before Linux 5.3, `ESRCH` when no such process exists, `EINVAL` for a pid that is not a
    /// process (a non-leader thread, zero, a negative number), `EMFILE`/`ENFILE` when descriptors run out.
    /// The corresponding C call is `pidfd_open(2)` (through `syscall(2)`).
    package static func open(_ pid: pid_t) throws(SystemError) -> CInt {
        opened(try retryingOnInterrupt("pidfd_open") { crunloop_pidfd_open(pid) }, by: "pidfd_open")
    }

    /// Answers how the child that `pidfd` refers to ended, or `nil` while it runs, without reaping it.
    ///
    /// Fails with `ECHILD` when the process is not a child of this process (or was already reaped), `EINVAL` before
    /// Linux 5.4 (no `P_PIDFD`). The corresponding C call is `waitid(2)` with `WEXITED | WNOHANG | WNOWAIT`.
    package static func peek(_ pidfd: CInt) throws(SystemError) -> Exit? {
        try wait(pidfd, options: WEXITED | WNOHANG | WNOWAIT)
    }

    /// Reaps the child that `pidfd` refers to if it has exited, answering how it ended; `nil` while it runs.
    ///
    /// Fails with `ECHILD` when someone else reaped it first. The corresponding C call is `waitid(2)` with
    /// `WEXITED | WNOHANG`.
    package static func reap(_ pidfd: CInt) throws(SystemError) -> Exit? {
        try wait(pidfd, options: WEXITED | WNOHANG)
    }

    private static func wait(_ pidfd: CInt, options: CInt) throws(SystemError) -> Exit? {
        var info = siginfo_t()
        _ = try retryingOnInterrupt("waitid", on: pidfd) { crunloop_waitid_pidfd(pidfd, &info, options) }
        // With WNOHANG and a child still running, waitid succeeds and leaves si_pid zero.
        guard info._sifields._sigchld.si_pid != 0 else { return nil }
        return Exit(code: info.si_code, status: info._sifields._sigchld.si_status)
    }
}
