import Glibc
import RunLoopKitSystem

/// An error from RunLoopKit: what went wrong, and for a failed system call the call and its `errno`.
///
/// Compare errors by ``code``; new codes may be added, so switch statements over codes need a default.
public struct LoopError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. An extensible set of constants rather than an enum.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The item was invalidated and can never be added to a loop again.
        public static let invalidated = Code("invalidated")
        /// The item already belongs to another loop; an item belongs to at most one loop.
        public static let ownedByAnotherLoop = Code("ownedByAnotherLoop")
        /// The loop's thread has exited and its loop was torn down.
        public static let loopTerminated = Code("loopTerminated")
        /// The descriptor is not open (`EBADF`).
        public static let badDescriptor = Code("badDescriptor")
        /// The descriptor is already in this loop's epoll set, but not through a source of the loop that a new
        /// source could share (`EEXIST`): it is one of the loop's own descriptors. (Sources of one loop on the same
        /// descriptor share one registration; see ``FileDescriptorSource``.)
        public static let descriptorAlreadyRegistered = Code("descriptorAlreadyRegistered")
        /// The descriptor cannot be watched for readiness, e.g. a regular file or directory (`EPERM`).
        public static let descriptorNotPollable = Code("descriptorNotPollable")
        /// A timer interval that is zero, negative or beyond the supported range.
        public static let invalidInterval = Code("invalidInterval")
        /// A negative timer tolerance.
        public static let invalidTolerance = Code("invalidTolerance")
        /// Running the ``Loop/Mode/common`` pseudo-mode, which names a set of modes, not one.
        public static let invalidMode = Code("invalidMode")
        /// An argument outside its documented range, e.g. a helper's batch size below one.
        public static let invalidArgument = Code("invalidArgument")
        /// The ``LoopThread`` was stopped (or is stopping) and accepts no more work.
        public static let threadStopped = Code("threadStopped")
        /// A path names no file (`ENOENT`), e.g. a file-change watch of a file that does not exist.
        public static let notFound = Code("notFound")
        /// The process may not do what was asked (`EACCES`, `EPERM`), e.g. watch a file it cannot read, or arm a
        /// memory-pressure trigger whose window needs `CAP_SYS_RESOURCE`.
        public static let permissionDenied = Code("permissionDenied")
        /// A per-user or system-wide limit is reached, e.g. inotify's watches (`ENOSPC`,
        /// `fs.inotify.max_user_watches`) or instances (`EMFILE`, `fs.inotify.max_user_instances`); the message
        /// names the limit.
        public static let limitReached = Code("limitReached")
        /// The running kernel lacks a facility the call needs (`ENOSYS`), e.g. `pidfd_open` before Linux 5.3, or
        /// pressure stall information (no `/proc/pressure`, or `psi=0`).
        public static let unsupported = Code("unsupported")
        /// A system call failed for a reason not listed above; see ``LoopError/errno``.
        public static let systemCallFailed = Code("systemCallFailed")

        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// The `errno` of the failed system call, when one failed.
    public let errno: CInt?
    /// A sentence saying what failed, for logs.
    public let message: String

    /// Creates an error; RunLoopKit creates these, tests may too.
    public init(_ code: Code, errno: CInt? = nil, message: String) {
        self.code = code
        self.errno = errno
        self.message = message
    }

    /// The message, with the code.
    public var description: String { "LoopError.\(code): \(message)" }

    /// A system call failure, classified when its `errno` has a meaning of its own here.
    package init(_ error: SystemError, context: String) {
        let code: Code =
            switch error.errno {
            case EBADF: .badDescriptor
            case EEXIST: .descriptorAlreadyRegistered
            case EPERM: .descriptorNotPollable
            default: .systemCallFailed
            }
        self.init(code, errno: error.errno, message: "\(context): \(error)")
    }
}
