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

    /// The whole of a small file (a `/proc` or `/sys` file), read through ``openForReading(_:)`` and
    /// ``read(_:into:)`` until end of file.
    package static func contents(of path: String) throws(SystemError) -> [UInt8] {
        let descriptor = try openForReading(path)
        defer { close(descriptor) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try read(descriptor, into: &buffer)
            if count == 0 { return contents }
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

/// A file's device and inode numbers: the same for every descriptor of one open file, different for another file.
package struct FileIdentity: Equatable, Sendable {
    package let device: UInt64
    package let inode: UInt64
}
