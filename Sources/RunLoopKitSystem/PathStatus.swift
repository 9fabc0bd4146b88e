import CRunLoopShims
import Glibc

/// What kind of file a path names: what a caller needs to decide how to open it.
package enum PathStatus {
    /// The kinds of file `stat(2)` tells apart.
    package enum Kind: Sendable, Equatable {
        case regular, directory, fifo, socket, characterDevice, blockDevice, other
    }

    /// `PROC_SUPER_MAGIC`: `/proc`.
    package static let procFileSystem = 0x9fa0
    /// `CGROUP2_SUPER_MAGIC`: the cgroup v2 hierarchy.
    package static let cgroup2FileSystem = 0x6367_7270

    /// The kind of the file `path` names, following symbolic links.
    ///
    /// The corresponding C call is `stat(2)`.
    package static func kind(of path: String) throws(SystemError) -> Kind {
        var status = stat()
        _ = try retryingOnInterrupt("stat") { stat(path, &status) }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFIFO: return .fifo
        case S_IFSOCK: return .socket
        case S_IFCHR: return .characterDevice
        case S_IFBLK: return .blockDevice
        default: return .other
        }
    }

    /// The `f_type` of the file system the file `path` names lives on (the `*_MAGIC` numbers of `linux/magic.h`).
    ///
    /// The corresponding C call is `statfs(2)`.
    package static func fileSystemType(of path: String) throws(SystemError) -> Int {
        var fileSystem = statfs()
        _ = try retryingOnInterrupt("statfs") { statfs(path, &fileSystem) }
        return Int(fileSystem.f_type)
    }
}
