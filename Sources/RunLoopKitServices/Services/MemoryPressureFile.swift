import RunLoopKit
import RunLoopKitSystem

/// Where the process's memory pressure is reported: its cgroup's `memory.pressure` (cgroup v2) when there is one,
/// else the system's `/proc/pressure/memory`. Reads `/proc/self/cgroup` and `/proc/self/mountinfo`; knows nothing
/// of loops.
enum MemoryPressureFile {
    /// The whole system's memory pressure file.
    static let systemPath = "/proc/pressure/memory"

    /// The process's cgroup's `memory.pressure` if the file exists, else ``systemPath`` if it exists, else `nil`.
    static func preferredPath() -> String? {
        if let path = cgroupPath(), FileDescriptorCalls.exists(path) { return path }
        return FileDescriptorCalls.exists(systemPath) ? systemPath : nil
    }

    /// `memory.pressure` in the process's cgroup v2 directory: the `0::` line of `/proc/self/cgroup` under the
    /// cgroup2 mount of `/proc/self/mountinfo` (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on hybrid systems).
    static func cgroupPath() -> String? {
        guard let membership = text(of: "/proc/self/cgroup"), let mounts = text(of: "/proc/self/mountinfo") else {
            return nil
        }
        return cgroupPath(membership: membership, mountinfo: mounts)
    }

    /// ``cgroupPath()`` from the texts of `/proc/self/cgroup` and `/proc/self/mountinfo`; `nil` when they name no
    /// cgroup v2 group and mount. No system call.
    static func cgroupPath(membership: String, mountinfo mounts: String) -> String? {
        guard let group = unifiedGroup(in: membership), let mount = cgroup2Mount(in: mounts) else { return nil }
        // A mount of a subtree (a container's) shows the groups below its root.
        var relative = Substring(group)
        if mount.root != "/", relative.hasPrefix(mount.root) { relative = relative.dropFirst(mount.root.count) }
        let directory = mount.point + (relative.hasPrefix("/") ? "" : "/") + relative
        return (directory.hasSuffix("/") ? directory : directory + "/") + "memory.pressure"
    }

    /// The group path of the cgroup v2 line (`0::/path`) of `/proc/self/cgroup`.
    static func unifiedGroup(in membership: String) -> String? {
        for line in membership.split(separator: "\n") where line.hasPrefix("0::") {
            let path = line.dropFirst(3)
            // A group removed while we are in it reads "/path (deleted)": nothing to watch there.
            guard path.hasPrefix("/"), !path.hasSuffix(" (deleted)") else { return nil }
            return String(path)
        }
        return nil
    }

    /// The root and mount point of the first cgroup2 mount of a `mountinfo` text.
    static func cgroup2Mount(in mountinfo: String) -> (root: String, point: String)? {
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            // ID, parent, device, root, mount point, options, optional fields…, "-", type, source, options.
            guard fields.count > 6, let separator = fields.firstIndex(of: "-"), separator + 1 < fields.count,
                fields[separator + 1] == "cgroup2"
            else { continue }
            return (unescaped(fields[3]), unescaped(fields[4]))
        }
        return nil
    }

    /// A `mountinfo` field with its octal escapes (`\040` for a space) decoded.
    private static func unescaped(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var rest = Array(field.utf8)[...]
        while let byte = rest.first {
            if byte == UInt8(ascii: "\\"), rest.count >= 4,
                let value = UInt8(String(decoding: rest.dropFirst().prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                rest = rest.dropFirst(4)
            } else {
                bytes.append(byte)
                rest = rest.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func text(of path: String) -> String? {
        guard let bytes = try? FileDescriptorCalls.contents(of: path) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
