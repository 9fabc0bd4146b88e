import CRunLoopShims
import Glibc

/// What kind of file a path names, and on which file system: what a caller needs to decide how to open it.
package struct PathStatus: Sendable, Equatable {
    /// The kinds of file `stat(2)` tells apart.
    package enum Kind: Sendable, Equatable {
        case regular, directory, fifo, socket, characterDevice, blockDevice, other
    }

    /// The file's kind (symbolic links followed).
    package var kind: Kind
    /// The `f_type` of the file system the file lives on (the `*_MAGIC` numbers of `linux/magic.h`).
    package var fileSystemType: Int

    /// `PROC_SUPER_MAGIC`: `/proc`.
    package static let procFileSystem = 0x9fa0
    /// `CGROUP2_SUPER_MAGIC`: the cgroup v2 hierarchy.
    package static let cgroup2FileSystem = 0x6367_7270

    /// The status of the file `path` names, following symbolic links.
    ///
    /// The corresponding C calls are `stat(2)`, then `statfs(2)`.
    package init(of path: String) throws(SystemError) {
        var status = stat()
        _ = try retryingOnInterrupt("stat") { stat(path, &status) }
        var fileSystem = statfs()
        _ = try retryingOnInterrupt("statfs") { statfs(path, &fileSystem) }
        self.kind = Self.kind(of: status.st_mode)
        self.fileSystemType = Int(fileSystem.f_type)
    }

    private static func kind(of mode: mode_t) -> Kind {
        switch mode & S_IFMT {
        case S_IFREG: .regular
        case S_IFDIR: .directory
        case S_IFIFO: .fifo
        case S_IFSOCK: .socket
        case S_IFCHR: .characterDevice
        case S_IFBLK: .blockDevice
        default: .other
        }
    }
}
