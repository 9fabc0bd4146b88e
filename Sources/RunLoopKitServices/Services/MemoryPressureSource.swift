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
/// Where the kernel has no PSI, systemd's convention lets another service tell of memory pressure instead, through
/// a FIFO (or character device) it writes to, or a Unix stream socket it listens on; `MEMORY_PRESSURE_WATCH` or
/// `path` may name either, as with sd-event. The source then watches for input, which it reads and drops: each pass
/// that finds some is one ``Event/thresholdExceeded``. A socket is connected and sent the trigger's text first. A
/// FIFO is opened for reading and writing when the process may (so a notifier that closes it and opens it again
/// is not a hang-up), else read-only. A regular file outside procfs and cgroupfs, a directory or a block device is
/// refused: nothing is opened or written.
///
/// The trigger is armed from `init` on: a firing before the source is added, or while none of its modes runs, is
/// reported once it runs. If the file goes away (its cgroup was removed: `EPOLLERR`), or the notifier does (its
/// socket's end of file, a hang-up of a read-only FIFO), the handler gets ``Event/fileRemoved`` once and the source
/// is invalid from then on. The descriptor is the source's: closed once
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
        /// The pressure file went away (its cgroup was removed), or the notifier at the other end of a socket or
        /// read-only FIFO did: nothing more will come; the source is invalid.
        case fileRemoved
    }

    /// When the source fires.
    public let trigger: MemoryPressureTrigger
    /// The pressure file the trigger is armed on.
    public let path: String

    let handler: @Sendable (MemoryPressureSource, Event) -> Void
    /// What the path names: a pressure file, or a notifier's pipe or socket.
    let kind: MemoryPressureEndpoint.Kind
    /// Where a notifier's messages are read to be dropped; made once. Loop thread only.
    private var notificationBuffer = [UInt8](repeating: 0, count: 256)

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
    /// ``defaultPath()`` and `trigger`. `MEMORY_PRESSURE_WRITE` is taken in systemd's form, base64 of the text with
    /// its terminating NUL (`c29tZSAyMDAwMDAgMjAwMDAwMAA=`, `"some 200000 2000000\0"`), or without that NUL; a NUL
    /// anywhere but at the end is refused. A notifier socket is sent the decoded bytes as they are, as sd-event
    /// sends them.
    ///
    /// The same mechanism watches CPU and I/O pressure: pass `/proc/pressure/cpu` or `/proc/pressure/io` (or a
    /// cgroup's `cpu.pressure` or `io.pressure`) as `path`; the trigger's form and limits are the same.
    ///
    /// - Parameters:
    ///   - trigger: When to fire (unless the service manager set one).
    ///   - path: A pressure file: `/proc/pressure/memory` or a cgroup's `memory.pressure`, or their CPU and I/O
    ///     counterparts; or a notifier's FIFO or Unix socket. Default: the service manager's, else
    ///     ``defaultPath()``.
    ///   - order: Among descriptor-backed sources ready in the same pass, lower orders are handled first. Default 0.
    ///   - environment: Where `MEMORY_PRESSURE_WATCH` and `MEMORY_PRESSURE_WRITE` are read when `path` is `nil`;
    ///     `nil` (the default) reads the process's environment. For tests.
    ///   - handler: Called on the loop's thread with the source and what happened.
    /// - Throws: `LoopError.Code.unsupported` when the kernel has no PSI (no such file, or the write is refused
    ///   with `EOPNOTSUPP`); `LoopError.Code.permissionDenied` when the file cannot be opened for writing, or the
    ///   kernel refuses the trigger's window because the process lacks `CAP_SYS_RESOURCE` (then the window must
    ///   be a multiple of 2 s, see ``MemoryPressureTrigger``); `LoopError.Code.invalidArgument` when the kernel
    ///   refuses the trigger otherwise, or the service manager's `MEMORY_PRESSURE_WRITE` is not base64 of a
    ///   trigger (of UTF-8 text ended by at most one NUL, for a notifier), or `MEMORY_PRESSURE_WATCH` is not a normalized absolute path (no `.` or `..` component, no `//`), or the path names a file of no kind the
    ///   source can watch (a regular file outside procfs and cgroupfs, a directory, a block device);
    ///   `LoopError.Code.unsupported` also when the unit turned watching off (`MEMORY_PRESSURE_WATCH` is
    ///   `/dev/null`, `MemoryPressureWatch=off`); `LoopError.Code.systemCallFailed` (`EMFILE`, `ENOMEM`, no
    ///   notifier listening on the socket: `ECONNREFUSED`, ...).
    public init(
        trigger: MemoryPressureTrigger,
        path: String? = nil,
        order: Int = 0,
        environment: [String: String]? = nil,
        handler: @escaping @Sendable (MemoryPressureSource, Event) -> Void
    ) throws(LoopError) {
        let file: String
        var trigger = trigger
        var request: MemoryPressureWatch.Request?
        if let path {
            file = path
        } else if let requested = try MemoryPressureWatch.request(in: environment) {
            file = requested.path
            request = requested
        } else {
            file = try Self.defaultPath()
        }
        let kind = try MemoryPressureEndpoint.kind(of: file)
        if kind == .pressureFile, let text = request?.trigger { trigger = try MemoryPressureTrigger(parsing: text) }
        let written = Self.written(to: kind, trigger: trigger, requested: request?.bytes)
        let descriptor = try MemoryPressureEndpoint.open(file, as: kind, trigger: trigger, written: written)
        self.trigger = trigger
        self.path = file
        self.kind = kind
        self.handler = handler
        try super.init(
            descriptor: descriptor, events: kind.events, order: order, ownsDescriptor: true,
            callout: { source, events in unsafeDowncast(source, to: MemoryPressureSource.self).report(events) })
    }

    /// What is written to the file: to a pressure file the trigger's text with its NUL (the kernel reads it as a C
    /// string, overwriting the last byte written with one: without it the window's last digit would be cut), as
    /// sd-event writes systemd's `MEMORY_PRESSURE_WRITE`; to a notifier socket the service manager's bytes as they
    /// were decoded (systemd's end with that NUL), as sd-event sends them, else the trigger's text with its NUL.
    static func written(
        to kind: MemoryPressureEndpoint.Kind, trigger: MemoryPressureTrigger, requested: [UInt8]?
    ) -> [UInt8] {
        if kind == .notifierSocket, let requested { return requested }
        return Array(trigger.description.utf8) + [0]
    }

    /// The armed pressure file's descriptor, until invalidation closed it (for tests).
    var pressureDescriptor: CInt? { withOwnedDescriptor { $0 } }

    /// What the loop saw: the trigger fired (`EPOLLPRI` on a pressure file; a notifier's message, read and dropped),
    /// or the file or its notifier went away (`EPOLLERR`, a hang-up, end of file). Loop thread only.
    private func report(_ events: Events) {
        guard !events.contains(.invalid), isValid else { return }  // A refused change: the loop invalidated it.
        let notified = kind == .pressureFile ? events.contains(.priority) : events.contains(.readable)
        var ended = !events.isDisjoint(with: [.error, .hangUp])
        var fired = notified && !ended
        if notified && kind != .pressureFile { (fired, ended) = drainNotifications(endedBefore: ended) }
        if ended {
            invalidate()  // EPOLLERR and a hang-up stay raised: the descriptor leaves the set before the handler runs.
            if fired { handler(self, .thresholdExceeded) }
            handler(self, .fileRemoved)
        } else if fired {
            handler(self, .thresholdExceeded)
        }
    }

    /// Reads and drops what a notifier sent until none is left, or 64 reads' worth (16 KiB: a notifier that never
    /// stops writing cannot hold the loop; the rest is reported again next pass); answers whether anything came, and
    /// whether the notifier went away (end of file, a failed read, or `endedBefore`). Loop thread only.
    private func drainNotifications(endedBefore: Bool) -> (received: Bool, ended: Bool) {
        var received = false
        let ended = withOwnedDescriptor { descriptor -> Bool in
            for _ in 0..<64 {
                do throws(SystemError) {
                    let count = try FileDescriptorCalls.read(descriptor, into: &notificationBuffer)
                    if count == 0 { return true }
                    received = true
                    if count < notificationBuffer.count { return endedBefore }
                } catch {
                    return error.errno != EAGAIN || endedBefore
                }
            }
            return endedBefore
        }
        return (received, ended ?? true)
    }
}
