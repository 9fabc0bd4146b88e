import Glibc
import RunLoopKit
import RunLoopKitSystem

/// What a memory-pressure path names, and how a ``MemoryPressureSource`` listens to it. The three kinds are the ones
/// sd-event's memory-pressure sources accept:
/// - a **pressure file** of the kernel (PSI: a regular file on procfs or cgroupfs): opened for reading and writing,
///   the trigger written to it, watched for `EPOLLPRI`;
/// - a **notifier pipe** (a FIFO or character device that another service writes to when memory runs short, where
///   the kernel has no PSI): opened for reading and writing when the process may (so the pipe never reports a
///   hang-up when a notifier closes it and another opens it later), else read-only; watched for input, which is read
///   and dropped;
/// - a **notifier socket** (a Unix stream socket another service listens on): connected, the trigger written to it,
///   watched for input, which is read and dropped; end of file means the notifier went away.
///
/// Anything else is refused before anything is opened or written: a directory, a device of another kind, and a
/// regular file on another file system (writing a trigger there would change someone's file). Knows nothing of
/// loops.
enum MemoryPressureEndpoint {
    enum Kind: Sendable, Equatable {
        case pressureFile, notifierPipe, notifierSocket

        /// What the source watches the descriptor for.
        var events: DescriptorBackedSource.Events { self == .pressureFile ? .priority : .readable }
    }

    /// What `path` names.
    /// - Throws: `LoopError.Code.unsupported` when nothing is there (`ENOENT`); `LoopError.Code.invalidArgument` for
    ///   a file that is none of the three kinds; `LoopError.Code.permissionDenied` or
    ///   `LoopError.Code.systemCallFailed` when the path cannot be examined.
    static func kind(of path: String) throws(LoopError) -> Kind {
        let kind: PathStatus.Kind
        let fileSystemType: Int
        do {
            kind = try PathStatus.kind(of: path)
            // Only a regular file's file system matters: it must be the kernel's.
            fileSystemType = kind == .regular ? try PathStatus.fileSystemType(of: path) : 0
        } catch {
            switch error.errno {
            case ENOENT, ENOTDIR: throw openError(error, path: path)
            case EACCES, EPERM:
                throw LoopError(.permissionDenied, errno: error.errno, message: "examining \(path): \(error)")
            default: throw LoopError(.systemCallFailed, errno: error.errno, message: "examining \(path): \(error)")
            }
        }
        switch kind {
        case .regular:
            guard fileSystemType == PathStatus.procFileSystem || fileSystemType == PathStatus.cgroup2FileSystem else {
                throw LoopError(
                    .invalidArgument,
                    message: "\(path) is a regular file on neither procfs nor cgroupfs, so not a pressure file; "
                        + "nothing was written to it")
            }
            return .pressureFile
        case .fifo, .characterDevice: return .notifierPipe
        case .socket: return .notifierSocket
        case .directory, .blockDevice, .other:
            throw LoopError(
                .invalidArgument, errno: kind == .directory ? EISDIR : EINVAL,
                message: "\(path) is \(kind == .directory ? "a directory" : "no file to watch"): a pressure "
                    + "file, a FIFO, a character device or a Unix socket is needed")
        }
    }

    /// Opens `path`, of `kind`, and writes `trigger` where the kind takes one (a pressure file, a socket); answers
    /// the descriptor, non-blocking and close-on-exec, which the caller owns. Nothing is left open on failure.
    /// - Throws: See ``MemoryPressureSource/init(trigger:path:order:environment:handler:)``.
    static func open(
        _ path: String, as kind: Kind, trigger: MemoryPressureTrigger, written: [UInt8]
    ) throws(LoopError)
        -> CInt
    {
        let descriptor: CInt
        do {
            switch kind {
            case .pressureFile: descriptor = try FileDescriptorCalls.openForReadingAndWriting(path)
            case .notifierPipe: descriptor = try openPipe(path)
            case .notifierSocket: descriptor = try StreamSocket.connect(to: path)
            }
        } catch {
            throw kind == .notifierSocket ? connectError(error, path: path) : openError(error, path: path)
        }
        guard kind != .notifierPipe else { return descriptor }
        do {
            _ = try FileDescriptorCalls.write(descriptor, written)
        } catch {
            FileDescriptorCalls.close(descriptor)
            throw kind == .pressureFile
                ? armError(error, trigger: trigger, path: path)
                : LoopError(
                    .systemCallFailed, errno: error.errno,
                    message: "sending the trigger to the notifier at \(path): \(error)")
        }
        return descriptor
    }

    /// A notifier pipe, for reading and writing when the process may write to it, else read-only.
    private static func openPipe(_ path: String) throws(SystemError) -> CInt {
        do {
            return try FileDescriptorCalls.openForReadingAndWriting(path)
        } catch let error where error.errno == EACCES || error.errno == EPERM || error.errno == EROFS {
            return try FileDescriptorCalls.openForReadingWithoutBlocking(path)
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

    private static func connectError(_ error: SystemError, path: String) -> LoopError {
        switch error.errno {
        case EACCES, EPERM:
            LoopError(.permissionDenied, errno: error.errno, message: "connecting to \(path): \(error)")
        case ENAMETOOLONG:
            LoopError(
                .invalidArgument, errno: ENAMETOOLONG,
                message: "\(path) is longer than a Unix socket address holds "
                    + "(\(UnixSocketAddress.maximumLength) bytes)")
        case ECONNREFUSED, EAGAIN:
            LoopError(
                .systemCallFailed, errno: error.errno,
                message: "no memory-pressure notifier takes connections at \(path): \(error)")
        default:
            LoopError(.systemCallFailed, errno: error.errno, message: "connecting to \(path): \(error)")
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
