import Glibc
import RunLoopKitSystem

/// An error from RunLoopKit or one of its products: what went wrong, and for a failed system call the call and its
/// `errno`. RunLoopKitServices, RunLoopKitGLib and RunLoopKitFoundation throw this type too, with codes of their own.
///
/// Compare errors by ``code``; new codes may be added, so switch statements over codes need a default.
public struct LoopError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. An extensible set of constants rather than an enum.
    ///
    /// Each module declares the codes only it throws in an extension of its own (the core's here; the services',
    /// the GLib bridge's and the Foundation bridge's in RunLoopKitServices, RunLoopKitGLib and RunLoopKitFoundation),
    /// so a code is there to see when its module is imported. A code that several products throw is declared once,
    /// in the one module they all see: the core. The initialiser is `package`: only this package's modules add codes.
    /// A code's name is its constant's name, and names are unique across the package's modules (`LoopErrorCodeTests`
    /// checks both).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        /// A code named `name`, which must be the name of the constant that holds it and unique in the package.
        /// Package seam: each product's extension of `Code` (see Loop+PackageSeam.swift).
        package init(_ name: String) {
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
        /// ``Loop/Mode/common``, which names a set of modes, given where one mode is needed: a bridge to another
        /// event loop (RunLoopKitGLib's `attachToGLib`, RunLoopKitFoundation's `bridgeToFoundation`) runs one mode at
        /// a time.
        public static let invalidMode = Code("invalidMode")
        /// An argument outside its documented range, e.g. a helper's batch size below one.
        public static let invalidArgument = Code("invalidArgument")
        /// The ``LoopThread`` was stopped (or is stopping) and accepts no more work.
        public static let threadStopped = Code("threadStopped")
        /// The kernel refused a ``LoopThread``'s scheduling policy or priority (``LoopThread/Options/scheduling``,
        /// `EPERM`): the real-time policies need `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least the priority.
        public static let schedulingNotPermitted = Code("schedulingNotPermitted")
        /// The loop is bridged to another event loop of that kind already (RunLoopKitGLib's attachment or driver,
        /// RunLoopKitFoundation's bridge): a second bridge would serve every pass twice, so it is refused. Invalidate
        /// the first to bridge again. Declared here because both bridge products throw it.
        public static let alreadyBridged = Code("alreadyBridged")
        /// The call is for a loop on virtual time (``Loop/isVirtual``), and this loop runs on real time: e.g.
        /// ``Loop/advance(by:in:)`` on a loop made as usual.
        public static let notVirtual = Code("notVirtual")
        /// A system call failed for a reason no other code names; see ``LoopError/errno`` and the message, which names
        /// the call.
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

    /// Creates an error; RunLoopKit and its products create these, tests may too. Any thread.
    public init(_ code: Code, errno: CInt? = nil, message: String) {
        self.code = code
        self.errno = errno
        self.message = message
    }

    /// The message, with the code.
    public var description: String { "LoopError.\(code): \(message)" }

    /// A failed system call of the core's descriptor registration (`epoll_ctl(2)`), classified by what its `errno`
    /// means there: `EBADF` ``Code/badDescriptor``, `EEXIST` ``Code/descriptorAlreadyRegistered``, `EPERM`
    /// ``Code/descriptorNotPollable``, anything else ``Code/systemCallFailed``. Any other call's failure is
    /// ``init(systemCall:context:)``.
    init(_ error: SystemError, context: String) {
        let code: Code =
            switch error.errno {
            case EBADF: .badDescriptor
            case EEXIST: .descriptorAlreadyRegistered
            case EPERM: .descriptorNotPollable
            default: .systemCallFailed
            }
        self.init(code, errno: error.errno, message: "\(context): \(error)")
    }

    // MARK: package seam (every product's errors; see Loop+PackageSeam.swift)

    /// Any failed system call, as ``Code/systemCallFailed`` with its `errno`, whatever the `errno` is: the one way the
    /// services and the bridges report a call of their own (`sendmsg(2)`, `sigaction(2)`, `inotify_init1(2)`,
    /// `fcntl(2)`, `epoll_create1(2)`). ``init(_:context:)`` reads `EBADF`, `EEXIST` and `EPERM` as what they mean to
    /// `epoll_ctl(2)`; from another call they mean no such thing (an `EPERM` from `sendmsg` is a security module's
    /// refusal). Any thread.
    package init(systemCall error: SystemError, context: String) {
        self.init(.systemCallFailed, errno: error.errno, message: "\(context): \(error)")
    }
}
