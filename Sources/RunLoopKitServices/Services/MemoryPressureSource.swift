import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Calls a handler on a loop's thread when the process's memory pressure crosses a ``MemoryPressureTrigger``: tasks
/// stalled on memory for at least the trigger's threshold within its window. The moment to drop caches, shed
/// load, or say so in the logs, before the OOM killer decides for you.
///
/// Linux mechanism: pressure stall information (PSI, Linux 4.20+). The source opens the pressure file
/// (`O_RDWR | O_NONBLOCK | O_CLOEXEC`), writes the trigger to it, and its loop watches the descriptor (a
/// `DescriptorBackedSource`) for `DescriptorBackedSource.Events.priority` (`EPOLLPRI`), which the kernel raises
/// when the trigger fires, at most once per window. The file is the process's cgroup's `memory.pressure` (cgroup
/// v2) when it has one, so a service in a container or a systemd slice sees its own pressure, else the system's
/// `/proc/pressure/memory` (see ``defaultPath()``); pass another path to watch another cgroup.
///
/// The trigger is armed from `init` on: a firing before the source is added, or while none of its modes runs, is
/// reported once it runs. If the file goes away (its cgroup was removed: `EPOLLERR`), the handler gets
/// ``Event/fileRemoved`` once and the source is invalid from then on. The descriptor is the source's: closed once
/// nothing can use it (at invalidation, or right after a handler call that is under way then), which disarms the
/// trigger.
///
/// Threading: `init`, `LoopItem.invalidate()`, `LoopItem.isValid` and the loop's `add`/`remove`/`contains` are safe from any
/// thread; the handler runs on the loop's thread with no RunLoopKit lock held and may invalidate its source. A
/// source belongs to at most one loop, in any number of its modes; while in a loop, the loop keeps it alive.
public final class MemoryPressureSource: DescriptorBackedSource, @unchecked Sendable {  // Unchecked: as its base.
    /// What the handler is told.
    public enum Event: Sendable, Hashable {
        /// The trigger fired: stall time reached its threshold within its window.
        case thresholdExceeded
        /// The pressure file went away (its cgroup was removed): nothing more will come; the source is invalid.
        case fileRemoved
    }

    /// When the source fires.
    public let trigger: MemoryPressureTrigger
    /// The pressure file the trigger is armed on.
    public let path: String

    let handler: @Sendable (MemoryPressureSource, Event) -> Void

    /// The pressure file a source uses when given none: the process's cgroup's `memory.pressure` (found through
    /// `/proc/self/cgroup` under the cgroup2 mount) when it exists, else `/proc/pressure/memory`. Any thread.
    /// - Throws: `LoopError.Code.unsupported` when neither exists (a kernel without PSI, or booted with `psi=0`,
    ///   or a container that hides it).
    public static func defaultPath() throws(LoopError) -> String {
        guard let path = MemoryPressureFile.preferredPath() else {
            throw LoopError(
                .unsupported, errno: ENOENT,
                message: "no pressure stall information: neither the cgroup's memory.pressure nor "
                    + "\(MemoryPressureFile.systemPath) exists (Linux 4.20+ with CONFIG_PSI, not booted with psi=0)")
        }
        return path
    }

    /// Arms `trigger` on `path`; the source is not in any loop yet. Any thread.
    ///
    /// Without a `path`, the service manager's choice comes first, as with sd-event's
    /// `sd_event_add_memory_pressure`: a unit with `MemoryPressureWatch=` sets `MEMORY_PRESSURE_WATCH` (the file)
    /// and `MEMORY_PRESSURE_WRITE` (the trigger, from `MemoryPressureThresholdSec=`), and both then replace
    /// ``defaultPath()`` and `trigger` (read ``trigger`` and ``path`` to see what was armed). Without them it is
    /// ``defaultPath()`` and `trigger`.
    ///
    /// The same mechanism watches CPU and I/O pressure: pass `/proc/pressure/cpu` or `/proc/pressure/io` (or a
    /// cgroup's `cpu.pressure` or `io.pressure`) as `path`; the trigger's form and limits are the same.
    ///
    /// - Parameters:
    ///   - trigger: When to fire (unless the service manager set one).
    ///   - path: A pressure file: `/proc/pressure/memory` or a cgroup's `memory.pressure`, or their CPU and I/O
    ///     counterparts. Default: the service manager's, else ``defaultPath()``.
    ///   - order: Among descriptor-backed sources ready in the same pass, lower orders are handled first. Default 0.
    ///   - environment: Where `MEMORY_PRESSURE_WATCH` and `MEMORY_PRESSURE_WRITE` are read when `path` is `nil`;
    ///     `nil` (the default) reads the process's environment. For tests.
    ///   - handler: Called on the loop's thread with the source and what happened.
    /// - Throws: `LoopError.Code.unsupported` when the kernel has no PSI (no such file, or the write is refused
    ///   with `EOPNOTSUPP`); `LoopError.Code.permissionDenied` when the file cannot be opened for writing, or the
    ///   kernel refuses the trigger's window because the process lacks `CAP_SYS_RESOURCE` (then the window must
    ///   be a multiple of 2 s, see ``MemoryPressureTrigger``); `LoopError.Code.invalidArgument` when the kernel
    ///   refuses the trigger otherwise, or the service manager's `MEMORY_PRESSURE_WRITE` is not base64 of a
    ///   trigger; `LoopError.Code.unsupported` also when the unit turned watching off (`MEMORY_PRESSURE_WATCH` is
    ///   `/dev/null`, `MemoryPressureWatch=off`); `LoopError.Code.systemCallFailed` (`EMFILE`, `ENOMEM`, ...).
    public init(
        trigger: MemoryPressureTrigger,
        path: String? = nil,
        order: Int = 0,
        environment: [String: String]? = nil,
        handler: @escaping @Sendable (MemoryPressureSource, Event) -> Void
    ) throws(LoopError) {
        let file: String
        var trigger = trigger
        if let path {
            file = path
        } else if let request = try MemoryPressureWatch.request(in: environment) {
            file = request.path
            if let text = request.trigger { trigger = try MemoryPressureTrigger(parsing: text) }
        } else {
            file = try Self.defaultPath()
        }
        let descriptor: CInt
        do {
            descriptor = try FileDescriptorCalls.openForReadingAndWriting(file)
        } catch {
            throw Self.openError(error, path: file)
        }
        do {
            // With its NUL: the kernel reads the text as a C string, cutting the last byte written.
            _ = try FileDescriptorCalls.write(descriptor, Array(trigger.description.utf8) + [0])
        } catch {
            FileDescriptorCalls.close(descriptor)
            throw Self.armError(error, trigger: trigger, path: file)
        }
        self.trigger = trigger
        self.path = file
        self.handler = handler
        try super.init(
            descriptor: descriptor, events: .priority, order: order, ownsDescriptor: true,
            callout: { source, events in unsafeDowncast(source, to: MemoryPressureSource.self).report(events) })
    }

    /// The armed pressure file's descriptor, until invalidation closed it (for tests).
    var pressureDescriptor: CInt? { withOwnedDescriptor { $0 } }

    /// What the loop saw on the pressure file: the trigger fired (`EPOLLPRI`), or the file went away (`EPOLLERR`).
    /// Loop thread only.
    private func report(_ events: Events) {
        guard !events.contains(.invalid), isValid else { return }  // A refused change: the loop invalidated it.
        if !events.isDisjoint(with: [.error, .hangUp]) {
            invalidate()  // EPOLLERR stays raised: the descriptor leaves the epoll set before the handler runs.
            handler(self, .fileRemoved)
        } else if events.contains(.priority) {
            handler(self, .thresholdExceeded)
        }
    }

    // MARK: Errors

    private static func openError(_ error: SystemError, path: String) -> LoopError {
        switch error.errno {
        case ENOENT, ENOTDIR:
            LoopError(
                .unsupported, errno: error.errno,
                message: "no pressure stall information at \(path) (Linux 4.20+ with CONFIG_PSI is needed)")
        case EACCES, EPERM, EROFS:
            LoopError(
                .permissionDenied, errno: error.errno,
                message: "\(path) cannot be opened for writing a trigger (before Linux 6.4 that needs "
                    + "CAP_SYS_RESOURCE): \(error)")
        default:
            LoopError(.systemCallFailed, errno: error.errno, message: "opening \(path): \(error)")
        }
    }

    private static func armError(_ error: SystemError, trigger: MemoryPressureTrigger, path: String) -> LoopError {
        switch error.errno {
        case EOPNOTSUPP, ENOENT, ENODEV:
            return LoopError(
                .unsupported, errno: error.errno,
                message: "the kernel refused a memory-pressure trigger on \(path): PSI is disabled (psi=0) or "
                    + "unavailable there: \(error)")
        case EACCES, EPERM:
            return LoopError(
                .permissionDenied, errno: error.errno,
                message: "arming a memory-pressure trigger on \(path) needs CAP_SYS_RESOURCE: \(error)")
        case EINVAL where !trigger.isAllowedUnprivileged:
            return LoopError(
                .permissionDenied, errno: EINVAL,
                message: "the kernel refused \"\(trigger)\" on \(path): without CAP_SYS_RESOURCE a trigger's "
                    + "window must be a multiple of 2 s (not \(trigger.window))")
        case EINVAL:
            return LoopError(
                .invalidArgument, errno: EINVAL, message: "the kernel refused the trigger \"\(trigger)\" on \(path)")
        default:
            return LoopError(
                .systemCallFailed, errno: error.errno, message: "arming \"\(trigger)\" on \(path): \(error)")
        }
    }
}
