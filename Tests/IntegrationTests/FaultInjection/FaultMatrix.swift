import Glibc
import RunLoopKit
import RunLoopKitSystem
import TestSupport
import Testing

/// One cell of the fault matrix: a wrapped system call made to fail with one `errno` where one scenario makes it,
/// and what the caller must see.
struct FaultCase: Codable, Sendable, CustomTestStringConvertible {
    /// Where the failing call is made.
    enum Scenario: String, Codable, Sendable, CaseIterable {
        /// `LoopThread(name:)` and `Loop.forCurrentThread()`: epoll_create1, eventfd, timerfd_create, the two
        /// epoll_ctl(ADD) of the loop's own descriptors, pthread_create, prctl (the thread's name).
        case loopCreation
        /// `LoopThread(name:options:)` with a stack size, a CPU affinity and a policy: the priority range's
        /// sched_get_priority_min and _max, the pthread_attr_* calls, pthread_create with them, and the worker's own
        /// sched_setscheduler (SCHED_BATCH and SCHED_IDLE, which the attributes cannot carry).
        case loopThreadOptions
        /// `loop.add(FileDescriptorSource)`: epoll_ctl(ADD) of the source's descriptor.
        case descriptorAdd
        /// Setting `events` of a registered source on the loop's thread: epoll_ctl(MOD).
        case descriptorModify
        /// Setting `events` from another thread: epoll_ctl(MOD), applied by the loop at its next pass.
        case descriptorModifyFromAnotherThread
        /// A ready source none of whose modes runs is parked: epoll_ctl(MOD) to one-shot.
        case descriptorPark
        /// A parked source's mode runs again: epoll_ctl(MOD) back to its events.
        case descriptorUnpark
        /// `invalidate()` of a registered source: epoll_ctl(DEL).
        case descriptorRemove
        /// `loop.add` of a second source on a descriptor a source of the loop watches: epoll_ctl(ADD), which the
        /// kernel answers `EEXIST` (the source joins the registration).
        case descriptorJoin
        /// The loop's thread applies that join and widens what the shared registration reports: epoll_ctl(MOD).
        case descriptorJoinModify
        /// One of two sources of a descriptor is invalidated; the loop narrows what the registration reports to
        /// what the other watches: epoll_ctl(MOD).
        case descriptorLeaveModify
        /// The last of two sources of a descriptor is invalidated (the first one's invalidation deletes nothing):
        /// epoll_ctl(DEL).
        case descriptorSharedRemove
        /// Waking a sleeping loop from another thread: write(2) of its eventfd.
        case wakeUpWrite
        /// A waker whose write found the eventfd's counter at its maximum reads it to zero: read(2). (The woken
        /// loop never reads it: the eventfd is edge-triggered.)
        case wakeUpRead
        /// The loop's sleep: epoll_wait.
        case wait
        /// A timer arms the loop's timerfd: timerfd_settime.
        case timerArm
        /// `SignalSource(signal:)`: eventfd, sigaction.
        case signalSourceCreate
        /// A delivery: the relay's write(2) from its C signal handler.
        case signalRelayWrite
        /// The source's loop drains its eventfd: read(2).
        case signalSourceRead
        /// `ChildExitSource(pid:)`: pidfd_open, waitid (the check that it is our child).
        case childExitCreate
        /// The child exited: waitid (look, then reap).
        case childExitReap
        /// A thread's name for a message (a stall report, a misuse trap): open(2) and read(2) of its `comm` file.
        case threadNameLookup
        /// `SystemdNotifier.notify`: socket(2) and sendto(2) of one datagram to `NOTIFY_SOCKET`.
        case serviceNotification
        /// `FileChangeSource(order:handler:)`: inotify_init1.
        case fileChangeCreate
        /// `FileChangeSource.addWatch`: inotify_add_watch.
        case fileChangeWatch
        /// `FileChangeSource.removeWatch`: inotify_rm_watch.
        case fileChangeUnwatch
        /// A change is queued: the source's loop reads its inotify descriptor, read(2).
        case fileChangeRead
        /// `MemoryPressureSource(trigger:path:)`: open(2) of the pressure file, write(2) of the trigger.
        case memoryPressureCreate
    }

    /// What the caller must see.
    enum Expectation: Codable, Sendable, Equatable {
        /// Nothing: the call is retried (`EINTR`) or the failure changes nothing (`EAGAIN` on an eventfd).
        case transparent
        /// The operation throws a `LoopError` with this code (its `description`) and the injected `errno`.
        case typedError(String)
        /// The item is invalidated by the loop, its `failure` carrying this code.
        case invalidated(String)
        /// The process traps, the message naming the call and its `errno`.
        case trap
        /// The failure is harmless and ignored (a closed descriptor already out of the set; a thread name).
        case tolerated
    }

    let call: String
    let errno: CInt
    let scenario: Scenario
    let expectation: Expectation
    /// Matching calls let through before the failures.
    var skip = 0
    /// Failures in a row (`EINTR` runs are long).
    var times = 1

    var fault: FaultInjection.Fault { .init(call, errno, skip: skip, times: times) }

    var testDescription: String {
        "\(scenario.rawValue): \(call) → \(Self.errnoName(errno))\(skip > 0 ? " (after \(skip))" : "")"
            + "\(times > 1 ? " ×\(times)" : "") ⇒ \(expectation)"
    }

    static func errnoName(_ code: CInt) -> String {
        let names: [CInt: String] = [
            EINTR: "EINTR", EAGAIN: "EAGAIN", EBADF: "EBADF", EEXIST: "EEXIST", EINVAL: "EINVAL", ELOOP: "ELOOP",
            ENOMEM: "ENOMEM", ENOSPC: "ENOSPC", EPERM: "EPERM", ENOENT: "ENOENT", EMFILE: "EMFILE", ENFILE: "ENFILE",
            ENODEV: "ENODEV", EFAULT: "EFAULT", ESRCH: "ESRCH", ENOSYS: "ENOSYS", ECHILD: "ECHILD", EACCES: "EACCES",
            EIO: "EIO", ECONNREFUSED: "ECONNREFUSED", ENOBUFS: "ENOBUFS", EMSGSIZE: "EMSGSIZE",
            EAFNOSUPPORT: "EAFNOSUPPORT", ENOTDIR: "ENOTDIR", ENAMETOOLONG: "ENAMETOOLONG", EOPNOTSUPP: "EOPNOTSUPP",
            EROFS: "EROFS", EBUSY: "EBUSY",
        ]
        return names[code] ?? "errno \(code)"
    }
}

/// Every wrapped system call, every `errno` its manual page lists, and what the caller sees: the table
/// Docs/Reliability.md prints.
enum FaultMatrix {
    /// A long run of `EINTR`: retried every time, never seen.
    static let interruptRun = 1_000

    static let cases: [FaultCase] =
        loopCreation + loopThreadOptions + descriptors + wakeUps + waitsAndTimers + signals + children + threadNames
        + notifications
        + fileChanges + memoryPressure

    /// inotify: every refusal a typed error naming its limit where one is at stake; a failed read of the source's
    /// own descriptor traps (as a signal source's does).
    static let fileChanges: [FaultCase] =
        rows(
            "inotify_init1", .fileChangeCreate,
            [
                (EINTR, .transparent), (EMFILE, .typedError("limitReached")), (ENFILE, .typedError(failed)),
                (ENOMEM, .typedError(failed)), (EINVAL, .typedError(failed)),
            ])
        + rows(
            "inotify_add_watch", .fileChangeWatch,
            [
                (EINTR, .transparent), (ENOENT, .typedError("notFound")), (EACCES, .typedError("permissionDenied")),
                (ENOSPC, .typedError("limitReached")), (ENOTDIR, .typedError("invalidArgument")),
                (ENAMETOOLONG, .typedError("invalidArgument")), (ELOOP, .typedError("invalidArgument")),
                (ENOMEM, .typedError(failed)), (EFAULT, .typedError(failed)), (EBADF, .typedError(failed)),
                (EINVAL, .typedError(failed)),
            ])
        // EINVAL: the kernel ended the watch first (its path deleted); the watch is forgotten all the same.
        + rows("inotify_rm_watch", .fileChangeUnwatch, [(EINTR, .transparent), (EINVAL, .tolerated), (EBADF, .trap)])
        // EAGAIN: nothing queued after all; the descriptor stays readable and the next pass reads the change.
        + rows(
            "read", .fileChangeRead,
            [(EINTR, .transparent), (EAGAIN, .transparent), (EBADF, .trap), (EFAULT, .trap), (EINVAL, .trap)])

    /// PSI: no file or a refused trigger is `unsupported` (no PSI) or `permissionDenied` (the capability a window
    /// needs); the opened file is closed either way. The path is examined first (`stat`, `statfs`: a pressure file,
    /// or a notifier's FIFO or socket).
    static let memoryPressure: [FaultCase] =
        rows(
            "stat", .memoryPressureCreate,
            [
                (EINTR, .transparent), (ENOENT, .typedError("unsupported")), (EACCES, .typedError("permissionDenied")),
                (ENOMEM, .typedError(failed)), (EOVERFLOW, .typedError(failed)),
            ])
        + rows("statfs", .memoryPressureCreate, [(EINTR, .transparent), (ENOSYS, .typedError(failed))])
        + rows(
            "open", .memoryPressureCreate,
            [
                (EINTR, .transparent), (ENOENT, .typedError("unsupported")), (EACCES, .typedError("permissionDenied")),
                (EPERM, .typedError("permissionDenied")), (EROFS, .typedError("permissionDenied")),
                (EMFILE, .typedError(failed)), (ENFILE, .typedError(failed)), (ENOMEM, .typedError(failed)),
            ])
        + rows(
            "write", .memoryPressureCreate,
            [
                (EINTR, .transparent), (EOPNOTSUPP, .typedError("unsupported")), (ENODEV, .typedError("unsupported")),
                (EINVAL, .typedError("invalidArgument")), (EPERM, .typedError("permissionDenied")),
                (EACCES, .typedError("permissionDenied")), (EBUSY, .typedError(failed)), (ENOMEM, .typedError(failed)),
                (EFAULT, .typedError(failed)),
            ])

    /// The service manager's socket: every failure is the caller's to see, and the socket is closed either way.
    static let notifications: [FaultCase] =
        rows(
            "socket", .serviceNotification,
            [
                (EINTR, .transparent), (EMFILE, .typedError(failed)), (ENFILE, .typedError(failed)),
                (ENOBUFS, .typedError(failed)), (ENOMEM, .typedError(failed)), (EACCES, .typedError(failed)),
                (EAFNOSUPPORT, .typedError(failed)),
            ])
        + rows(
            "sendto", .serviceNotification,
            [
                (EINTR, .transparent), (ENOENT, .typedError(failed)), (ECONNREFUSED, .typedError(failed)),
                (EAGAIN, .typedError(failed)), (ENOBUFS, .typedError(failed)), (ENOMEM, .typedError(failed)),
                (EACCES, .typedError(failed)), (EMSGSIZE, .typedError(failed)), (EPERM, .typedError(failed)),
                (EEXIST, .typedError(failed)),
            ])

    /// A name is only decoration: a message without it is still the message.
    static let threadNames: [FaultCase] =
        rows(
            "open", .threadNameLookup,
            [
                (EINTR, .transparent), (EMFILE, .tolerated), (ENFILE, .tolerated), (ENOENT, .tolerated),
                (EACCES, .tolerated),
            ])
        + rows("read", .threadNameLookup, [(EINTR, .transparent), (EIO, .tolerated)])

    private static func rows(
        _ call: String,
        _ scenario: FaultCase.Scenario,
        skip: Int = 0,
        _ expectations: [(CInt, FaultCase.Expectation)]
    ) -> [FaultCase] {
        expectations.map { code, expectation in
            FaultCase(
                call: call, errno: code, scenario: scenario, expectation: expectation, skip: skip,
                times: code == EINTR ? interruptRun : 1)
        }
    }

    private static let failed = "systemCallFailed"

    static let loopCreation: [FaultCase] =
        rows(
            "epoll_create1", .loopCreation,
            [
                (EINTR, .transparent), (EMFILE, .typedError(failed)), (ENFILE, .typedError(failed)),
                (ENOMEM, .typedError(failed)), (EINVAL, .typedError(failed)),
            ])
        + rows(
            "eventfd", .loopCreation,
            [
                (EINTR, .transparent), (EMFILE, .typedError(failed)), (ENFILE, .typedError(failed)),
                (ENODEV, .typedError(failed)), (ENOMEM, .typedError(failed)), (EINVAL, .typedError(failed)),
            ])
        + rows(
            "timerfd_create", .loopCreation,
            [
                (EINTR, .transparent), (EMFILE, .typedError(failed)), (ENFILE, .typedError(failed)),
                (ENODEV, .typedError(failed)), (ENOMEM, .typedError(failed)), (EINVAL, .typedError(failed)),
            ])
        // The eventfd's registration (skip 0) and the timerfd's (skip 1): the timerfd leaked before the fix.
        + [0, 1].flatMap { skip in
            rows(
                "epoll_ctl(EPOLL_CTL_ADD)", .loopCreation, skip: skip,
                [
                    (EINTR, .transparent), (ENOSPC, .typedError(failed)), (ENOMEM, .typedError(failed)),
                    (EBADF, .typedError("badDescriptor")), (EEXIST, .typedError("descriptorAlreadyRegistered")),
                    (EINVAL, .typedError(failed)), (ELOOP, .typedError(failed)),
                    (EPERM, .typedError("descriptorNotPollable")),
                ])
        }
        + rows(
            "pthread_create", .loopCreation,
            [(EAGAIN, .typedError(failed)), (EINVAL, .typedError(failed)), (EPERM, .typedError(failed))])
        + rows(
            "prctl(PR_SET_NAME)", .loopCreation, [(EINTR, .transparent), (EINVAL, .tolerated), (EFAULT, .tolerated)])

    /// Options out of the kernel's range are `invalidArgument`, a refused policy `schedulingNotPermitted`, the rest
    /// `systemCallFailed`; nothing is left made.
    static let loopThreadOptions: [FaultCase] =
        ["sched_get_priority_min", "sched_get_priority_max"].flatMap { call in
            rows(call, .loopThreadOptions, [(EINTR, .transparent), (EINVAL, .typedError("invalidArgument"))])
        }
        + rows("pthread_attr_init", .loopThreadOptions, [(ENOMEM, .typedError(failed))])
        + [
            "pthread_attr_setstacksize", "pthread_attr_setaffinity_np", "pthread_attr_setinheritsched",
            "pthread_attr_setschedpolicy", "pthread_attr_setschedparam",
        ].flatMap { call in rows(call, .loopThreadOptions, [(EINVAL, .typedError("invalidArgument"))]) }
        + rows(
            "pthread_create", .loopThreadOptions,
            [
                (EAGAIN, .typedError(failed)), (EINVAL, .typedError("invalidArgument")),
                (EPERM, .typedError("schedulingNotPermitted")),
            ])
        + rows(
            "sched_setscheduler", .loopThreadOptions,
            [
                (EINTR, .transparent), (EINVAL, .typedError("invalidArgument")),
                (EPERM, .typedError("schedulingNotPermitted")), (ESRCH, .typedError(failed)),
            ])

    static let descriptors: [FaultCase] =
        rows(
            "epoll_ctl(EPOLL_CTL_ADD)", .descriptorAdd,
            [
                (EINTR, .transparent), (ENOSPC, .typedError(failed)), (ENOMEM, .typedError(failed)),
                (EBADF, .typedError("badDescriptor")), (EEXIST, .typedError("descriptorAlreadyRegistered")),
                (EINVAL, .typedError(failed)), (ELOOP, .typedError(failed)),
                (EPERM, .typedError("descriptorNotPollable")),
            ])
        + [FaultCase.Scenario.descriptorModify, .descriptorModifyFromAnotherThread, .descriptorPark, .descriptorUnpark]
        .flatMap { scenario in
            rows(
                "epoll_ctl(EPOLL_CTL_MOD)", scenario,
                [
                    (EINTR, .transparent), (ENOMEM, .invalidated(failed)), (EINVAL, .invalidated(failed)),
                    (EBADF, .invalidated("badDescriptor")), (ENOENT, .invalidated("badDescriptor")),
                    (EPERM, .invalidated("badDescriptor")),
                ])
        }
        + [FaultCase.Scenario.descriptorRemove, .descriptorSharedRemove].flatMap { scenario in
            rows(
                "epoll_ctl(EPOLL_CTL_DEL)", scenario,
                [
                    (EINTR, .transparent), (EBADF, .tolerated), (ENOENT, .tolerated), (EPERM, .tolerated),
                    (ENOMEM, .trap), (EINVAL, .trap),
                ])
        }
        // EEXIST is the kernel's own answer to a second source of the same open file: the source joins.
        + rows(
            "epoll_ctl(EPOLL_CTL_ADD)", .descriptorJoin,
            [
                (EINTR, .transparent), (EEXIST, .transparent), (ENOSPC, .typedError(failed)),
                (ENOMEM, .typedError(failed)), (EBADF, .typedError("badDescriptor")), (EINVAL, .typedError(failed)),
                (ELOOP, .typedError(failed)), (EPERM, .typedError("descriptorNotPollable")),
            ])
        // A refused change of a shared registration takes it out of the set: every source of it is told.
        + [FaultCase.Scenario.descriptorJoinModify, .descriptorLeaveModify].flatMap { scenario in
            rows(
                "epoll_ctl(EPOLL_CTL_MOD)", scenario,
                [
                    (EINTR, .transparent), (ENOMEM, .invalidated(failed)), (EINVAL, .invalidated(failed)),
                    (EBADF, .invalidated("badDescriptor")), (ENOENT, .invalidated("badDescriptor")),
                    (EPERM, .invalidated("badDescriptor")),
                ])
        }

    static let wakeUps: [FaultCase] =
        // EAGAIN: the counter is at its maximum; the waker reads it to zero and writes again.
        rows("write", .wakeUpWrite, [(EINTR, .transparent), (EAGAIN, .transparent), (EBADF, .trap), (EINVAL, .trap)])
        // That read (the scenario fills the counter first). EAGAIN: another waker read it first.
        + rows("read", .wakeUpRead, [(EINTR, .transparent), (EAGAIN, .transparent), (EBADF, .trap), (EINVAL, .trap)])

    static let waitsAndTimers: [FaultCase] =
        rows("epoll_wait", .wait, [(EINTR, .transparent), (EBADF, .trap), (EFAULT, .trap), (EINVAL, .trap)])
        + rows("timerfd_settime", .timerArm, [(EINTR, .transparent), (EBADF, .trap), (EFAULT, .trap), (EINVAL, .trap)])

    static let signals: [FaultCase] =
        rows(
            "eventfd", .signalSourceCreate,
            [
                (EINTR, .transparent), (EMFILE, .typedError(failed)), (ENFILE, .typedError(failed)),
                (ENODEV, .typedError(failed)), (ENOMEM, .typedError(failed)), (EINVAL, .typedError(failed)),
            ])
        + rows(
            "sigaction", .signalSourceCreate,
            [(EINTR, .transparent), (EINVAL, .typedError(failed)), (EFAULT, .typedError(failed))])
        // The count lives in the relay: a failed wake-up delays the report to the next delivery, loses nothing.
        + rows(
            FaultInjection.relayWriteCall, .signalRelayWrite,
            [(EAGAIN, .transparent), (EBADF, .transparent), (EINVAL, .transparent)])
        + rows(
            "read", .signalSourceRead, [(EINTR, .transparent), (EAGAIN, .transparent), (EBADF, .trap), (EINVAL, .trap)])

    static let children: [FaultCase] =
        rows(
            "pidfd_open", .childExitCreate,
            [
                (EINTR, .transparent), (EMFILE, .typedError(failed)), (ENFILE, .typedError(failed)),
                (ENODEV, .typedError(failed)), (ENOMEM, .typedError(failed)), (ESRCH, .typedError("invalidArgument")),
                (EINVAL, .typedError("invalidArgument")), (ENOSYS, .typedError("unsupported")),
            ])
        + rows(
            "waitid", .childExitCreate,
            [(EINTR, .transparent), (ECHILD, .typedError("invalidArgument")), (EINVAL, .typedError("unsupported"))])
        // The source is made before the fault: the exit's look at the child fails (ECHILD: it was reaped elsewhere,
        // so it exited: the reap then answers for itself).
        + rows("waitid", .childExitReap, [(EINTR, .transparent), (ECHILD, .transparent), (EINVAL, .trap)])
        // skip 1: the reap fails; ECHILD means someone else reaped it (the handler hears `reapedElsewhere`).
        + rows("waitid", .childExitReap, skip: 1, [(EINTR, .transparent), (ECHILD, .tolerated), (EINVAL, .trap)])
}
