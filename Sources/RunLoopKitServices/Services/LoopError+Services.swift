import RunLoopKit

/// The codes only the services throw. The services' failed system calls are the core's
/// `LoopError.Code.systemCallFailed`, built with `LoopError(systemCall:context:)`; their bad arguments, closed
/// descriptors and exited loops are the core's codes too.
extension LoopError.Code {
    /// A path names no file (`ENOENT`), e.g. a file-change watch of a file that does not exist.
    public static let notFound = Self("notFound")
    /// The process may not do what was asked (`EACCES`, `EPERM`), e.g. watch a file it cannot read, or arm a
    /// memory-pressure trigger whose window needs `CAP_SYS_RESOURCE`.
    public static let permissionDenied = Self("permissionDenied")
    /// A per-user or system-wide limit is reached, e.g. inotify's watches (`ENOSPC`, `fs.inotify.max_user_watches`)
    /// or instances (`EMFILE`, `fs.inotify.max_user_instances`); the message names the limit.
    public static let limitReached = Self("limitReached")
    /// The running kernel lacks a facility the call needs (`ENOSYS`), e.g. `pidfd_open` before Linux 5.3, or
    /// pressure stall information (no `/proc/pressure`, or `psi=0`).
    public static let unsupported = Self("unsupported")
}
