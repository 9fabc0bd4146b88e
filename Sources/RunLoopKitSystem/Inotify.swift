import Glibc

/// The inotify calls a file-change source needs, each wrapped once. Knows nothing of loops.
///
/// An inotify instance is a descriptor that becomes readable when one of its watches saw a change; reading it yields
/// packed variable-length records (`struct inotify_event` and a NUL-padded name), only whole ones per read.
package enum Inotify {
    /// The size of a record's fixed part, before its name.
    package static let headerSize = MemoryLayout<inotify_event>.size

    /// The room one record can take at most: the fixed part and the longest name with its NUL. A read into a buffer
    /// with less room left than this may have stopped short of the next record.
    package static let largestRecordSize = headerSize + Int(NAME_MAX) + 1

    /// A new inotify instance with no watches, non-blocking and close-on-exec.
    ///
    /// Fails with `EMFILE` when the user's instances (`fs.inotify.max_user_instances`) or the process's descriptors
    /// run out, `ENFILE`, `ENOMEM`. The corresponding C call is `inotify_init1(2)` with `IN_CLOEXEC | IN_NONBLOCK`.
    package static func create() throws(SystemError) -> CInt {
        let flags = CInt(IN_CLOEXEC) | CInt(IN_NONBLOCK)
        return opened(try retryingOnInterrupt("inotify_init1") { inotify_init1(flags) }, by: "inotify_init1")
    }

    /// Watches `path` for the events in `mask`; answers the watch descriptor, the same one when the file (by any
    /// path) is already watched by `instance` (its mask is then replaced).
    ///
    /// Fails with `ENOENT`, `EACCES` (no read permission), `ENOSPC` (the user's watch limit,
    /// `fs.inotify.max_user_watches`), `ENOTDIR`, `ENAMETOOLONG`, `ELOOP`, `ENOMEM`. The corresponding C call is
    /// `inotify_add_watch(2)`.
    package static func addWatch(_ instance: CInt, path: String, mask: UInt32) throws(SystemError) -> CInt {
        try retryingOnInterrupt("inotify_add_watch", on: instance) { inotify_add_watch(instance, path, mask) }
    }

    /// Removes watch `watch` of `instance`; the kernel queues an `IN_IGNORED` record for it.
    ///
    /// Fails with `EINVAL` when the watch is already gone (its file was deleted, its file system unmounted). The
    /// corresponding C call is `inotify_rm_watch(2)`.
    package static func removeWatch(_ instance: CInt, _ watch: CInt) throws(SystemError) {
        _ = try retryingOnInterrupt("inotify_rm_watch", on: instance) { inotify_rm_watch(instance, watch) }
    }

    /// Reads the queued records that fit into `buffer`; answers how many bytes, 0 when none is queued (`EAGAIN`).
    ///
    /// The corresponding C call is `read(2)`.
    package static func read(_ instance: CInt, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        do {
            return try retryingOnInterrupt("read", on: instance) {
                Glibc.read(instance, buffer.baseAddress, buffer.count)
            }
        } catch let error where error.errno == EAGAIN {
            return 0
        }
    }
}
