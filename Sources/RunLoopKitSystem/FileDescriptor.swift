import CRunLoopShims
import Glibc

/// Thin wrappers over the descriptor calls the loop needs beyond its own kernel objects.
package enum FileDescriptorCalls {
    /// Closes `descriptor` once, never retrying: after `EINTR` the descriptor is already gone on Linux.
    ///
    /// The corresponding C call is `close(2)`.
    package static func close(_ descriptor: CInt) {
        #if RUNLOOPKIT_FAULT_INJECTION
        FaultInjection.recordClosed(descriptor)
        #endif
        _ = Glibc.close(descriptor)
    }

    /// Opens `path` read-only and close-on-exec.
    ///
    /// The corresponding C call is `open(2)`.
    package static func openForReading(_ path: String) throws(SystemError) -> CInt {
        opened(try retryingOnInterrupt("open") { Glibc.open(path, O_RDONLY | O_CLOEXEC) }, by: "open")
    }

    /// Opens `path` for reading and writing, non-blocking and close-on-exec: how a pressure file is opened to
    /// arm a trigger on it.
    ///
    /// The corresponding C call is `open(2)` with `O_RDWR | O_NONBLOCK | O_CLOEXEC`.
    package static func openForReadingAndWriting(_ path: String) throws(SystemError) -> CInt {
        let flags = O_RDWR | O_NONBLOCK | O_CLOEXEC
        return opened(try retryingOnInterrupt("open") { Glibc.open(path, flags) }, by: "open")
    }

    /// Opens `path` read-only, non-blocking and close-on-exec: how a FIFO is opened for listening when this process
    /// may not write to it.
    ///
    /// The corresponding C call is `open(2)` with `O_RDONLY | O_NONBLOCK | O_CLOEXEC`.
    package static func openForReadingWithoutBlocking(_ path: String) throws(SystemError) -> CInt {
        let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC
        return opened(try retryingOnInterrupt("open") { Glibc.open(path, flags) }, by: "open")
    }

    /// Writes `bytes` to `descriptor` in one call; answers how many were written.
    ///
    /// The corresponding C call is `write(2)`.
    package static func write(_ descriptor: CInt, _ bytes: [UInt8]) throws(SystemError) -> Int {
        let written = bytes.withUnsafeBytes { buffer in
            Result { () throws(SystemError) in
                try retryingOnInterrupt("write", on: descriptor) {
                    Glibc.write(descriptor, buffer.baseAddress, buffer.count)
                }
            }
        }
        return try written.get()
    }

    /// The largest file ``contents(of:)`` reads: far beyond any `/proc` or `/sys` file it is meant for (a
    /// `mountinfo` of ten thousand mounts is about 1.5 MB), and a bound on what a path that never ends
    /// (`/dev/zero`, a FIFO that a writer keeps filling) can make it allocate.
    package static let largestContents = 16 << 20

    /// The whole of a small file (a `/proc` or `/sys` file), read through ``openForReading(_:)`` and
    /// ``read(_:into:)`` until end of file.
    ///
    /// Fails with `EFBIG` (as the call `"read"`) when the file holds more than ``largestContents`` bytes.
    package static func contents(of path: String) throws(SystemError) -> [UInt8] {
        let descriptor = try openForReading(path)
        defer { close(descriptor) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try read(descriptor, into: &buffer)
            if count == 0 { return contents }
            guard contents.count + count <= largestContents else { throw SystemError(call: "read", errno: EFBIG) }
            contents += buffer.prefix(count)
        }
    }

    /// Whether `path` names an existing file (following symbolic links).
    ///
    /// The corresponding C call is `access(2)` with `F_OK`.
    package static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Reads at most `buffer.count` bytes into `buffer`; answers how many (0 at end of file).
    ///
    /// The corresponding C call is `read(2)`.
    package static func read(_ descriptor: CInt, into buffer: inout [UInt8]) throws(SystemError) -> Int {
        let capacity = buffer.count
        let count = buffer.withUnsafeMutableBytes { bytes in
            Result { () throws(SystemError) in
                try retryingOnInterrupt("read", on: descriptor) { Glibc.read(descriptor, bytes.baseAddress, capacity) }
            }
        }
        return try count.get()
    }

    /// Answers whether `descriptor` names an open file description in this process.
    ///
    /// The corresponding C call is `fcntl(2)` with `F_GETFD`.
    package static func isOpen(_ descriptor: CInt) -> Bool {
        descriptor >= 0 && fcntl(descriptor, F_GETFD) != -1
    }

    /// Marks `descriptor` close-on-exec (`FD_CLOEXEC`), keeping its other descriptor flags: a descriptor this
    /// process inherited must not leak further into the programs it starts.
    ///
    /// The corresponding C calls are `fcntl(2)` with `F_GETFD`, then `F_SETFD`.
    package static func setCloseOnExec(_ descriptor: CInt) throws(SystemError) {
        let flags = try retryingOnInterrupt("fcntl", on: descriptor) { fcntl(descriptor, F_GETFD) }
        if flags & FD_CLOEXEC != 0 { return }
        _ = try retryingOnInterrupt("fcntl", on: descriptor) { fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
    }

    /// Which file `descriptor` names (device and inode), `nil` when it is not open: tells a descriptor apart from
    /// another file that got the same number after it was closed.
    ///
    /// The corresponding C call is `fstat(2)`.
    package static func identity(of descriptor: CInt) -> FileIdentity? {
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else { return nil }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}

extension FileDescriptorCalls {
    /// The file system type of anonymous-inode files (`ANON_INODE_FS_MAGIC` of `linux/magic.h`): every eventfd,
    /// timerfd, signalfd, epoll set and inotify instance (and, before Linux 6.9, pidfd) is one inode of it.
    private static let anonymousInodeFileSystem = 0x0904_1934

    /// Whether `descriptor` names an anonymous-inode file, which every other such file of the process shares its
    /// device and inode numbers with, so that ``identity(of:)`` cannot tell them apart; `false` when it is not open.
    ///
    /// The corresponding C call is `fstatfs(2)`.
    package static func isAnonymousInode(_ descriptor: CInt) -> Bool {
        var status = statfs()
        guard descriptor >= 0, fstatfs(descriptor, &status) == 0 else { return false }
        return Int(status.f_type) == anonymousInodeFileSystem
    }

    /// A second, close-on-exec descriptor for the open file `descriptor` names, numbered at least 3 (never a
    /// standard stream's number).
    ///
    /// The corresponding C call is `fcntl(2)` with `F_DUPFD_CLOEXEC`.
    package static func duplicate(_ descriptor: CInt) throws(SystemError) -> CInt {
        opened(
            try retryingOnInterrupt("fcntl(F_DUPFD_CLOEXEC)", on: descriptor) { fcntl(descriptor, F_DUPFD_CLOEXEC, 3) },
            by: "fcntl(F_DUPFD_CLOEXEC)")
    }

    /// Makes `target` name the open file `descriptor` names, close-on-exec, closing what `target` named before in
    /// the same step: no other thread can see `target` closed or take its number in between.
    ///
    /// The corresponding C call is `dup3(2)` with `O_CLOEXEC`.
    package static func duplicate(_ descriptor: CInt, onto target: CInt) throws(SystemError) {
        _ = try retryingOnInterrupt("dup3", on: target) { crunloop_dup3_cloexec(descriptor, target) }
    }

    /// Whether `descriptor` names the same open file as `reference` (one `open`, one `eventfd`, ..., perhaps under
    /// two numbers): what tells anonymous-inode files apart. `false` when `descriptor` is not open; `nil` when the
    /// kernel will not say (kcmp built out, `ENOSYS`, or refused, `EPERM`).
    ///
    /// The corresponding C call is `kcmp(2)` with `KCMP_FILE`.
    package static func namesSameFile(_ descriptor: CInt, as reference: CInt) throws(SystemError) -> Bool? {
        do throws(SystemError) {
            return try retryingOnInterrupt("kcmp(KCMP_FILE)", on: descriptor) {
                crunloop_kcmp_files(descriptor, reference)
            } == 0
        } catch {
            switch error.errno {
            case EBADF: return false
            case ENOSYS, EPERM, EACCES: return nil
            default: throw error
            }
        }
    }

    /// What `epoll` holds under the descriptor number `target` compared with the file `descriptor` names: whether
    /// its entry `index` (0 first; a set holds several under one number when their files were opened once each and
    /// all but one no longer have that number) names the same file. `nil` when the kernel will not say (as for
    /// ``namesSameFile(_:as:)``).
    ///
    /// Pass the set itself as `descriptor` to ask only whether the entry exists (a set never watches itself).
    ///
    /// The corresponding C call is `kcmp(2)` with `KCMP_EPOLL_TFD`.
    package static func compare(
        _ descriptor: CInt,
        withEntry index: Int = 0,
        of target: CInt,
        in epoll: CInt
    ) throws(SystemError) -> EpollEntryComparison? {
        do throws(SystemError) {
            let order = try retryingOnInterrupt("kcmp(KCMP_EPOLL_TFD)", on: descriptor) {
                crunloop_kcmp_epoll_target(descriptor, epoll, target, UInt32(index))
            }
            return order == 0 ? .sameFile : .otherFile
        } catch {
            switch error.errno {
            case ENOENT: return .noEntry
            case EBADF: return .descriptorNotOpen
            case ENOSYS, EPERM, EACCES: return nil
            default: throw error
            }
        }
    }
}

/// What an epoll set holds under a descriptor number, compared with the file a descriptor names
/// (``FileDescriptorCalls/compare(_:withEntry:of:in:)``).
package enum EpollEntryComparison: Sendable {
    /// The entry watches the file the descriptor names.
    case sameFile
    /// The entry watches another file.
    case otherFile
    /// The set has no such entry.
    case noEntry
    /// The descriptor (or the set) is not open.
    case descriptorNotOpen
}

/// A file's device and inode numbers: the same for every descriptor of one open file, different for another file.
package struct FileIdentity: Equatable, Sendable {
    package let device: UInt64
    package let inode: UInt64
}
