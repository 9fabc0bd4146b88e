import RunLoopKit
import RunLoopKitSystem

extension LoopError {
    /// A failed system call of a service, reported as `LoopError.Code.systemCallFailed` with its `errno`, whatever
    /// the `errno` is. The core's `LoopError(_:context:)` reads `EBADF`, `EEXIST` and `EPERM` as what they mean to
    /// `epoll_ctl(2)` when a descriptor is registered (`badDescriptor`, `descriptorAlreadyRegistered`,
    /// `descriptorNotPollable`); from a service's `sendmsg(2)`, `sigaction(2)` or `inotify_init1(2)` they mean no
    /// such thing (an `EPERM` from `sendmsg` is a security module's refusal), so services use this instead.
    init(systemCall error: SystemError, context: String) {
        self.init(.systemCallFailed, errno: error.errno, message: "\(context): \(error)")
    }
}
