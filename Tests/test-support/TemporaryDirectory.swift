import Glibc

/// A fresh directory under /tmp, removed with everything in it by ``remove()``; and the file operations the
/// file-change tests make in it.
package struct TemporaryDirectory: Sendable {
    package let path: String

    package init() {
        var template = Array("/tmp/runloopkit-fswatch-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp: errno \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    package func path(_ name: String) -> String { path + "/" + name }

    /// Creates (or truncates) `name` and writes `text` to it.
    package func write(_ name: String, _ text: String = "x") {
        let descriptor = open(path(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        precondition(descriptor >= 0, "open \(name): errno \(errno)")
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(descriptor, $0.baseAddress, $0.count - 1) }
        close(descriptor)
    }

    package func remove() {
        _ = system("rm -rf '\(path)'")
    }

    /// How many inotify descriptors this process has open.
    package static func openInotifyDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        var target = [CChar](repeating: 0, count: 256)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.first?.isNumber == true else { continue }
            let length = readlink("/proc/self/fd/" + name, &target, target.count - 1)
            guard length > 0 else { continue }
            let link = String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if link == "anon_inode:inotify" { count += 1 }
        }
        return count
    }
}
