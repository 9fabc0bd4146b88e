import Glibc
import RunLoopKit

/// What the kernel says about this process: open descriptors, threads and resident memory, read from `/proc`.
enum ProcessFigures {
    /// Entries in `/proc/self/fd`, not counting the directory's own descriptor.
    static func openDescriptorCount() -> Int {
        entries(in: "/proc/self/fd") - 1
    }

    /// Entries in `/proc/self/task`: the process's threads.
    static func threadCount() -> Int {
        entries(in: "/proc/self/task")
    }

    /// The resident set size in bytes: the second field of `/proc/self/statm` (pages) times the page size.
    static func residentBytes() -> Int {
        let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return 0 }
        let fields = buffer[0..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * Int(getpagesize())
    }

    /// The names in `directory`, without `.` and `..`; -1 when it cannot be read.
    private static func entries(in directory: String) -> Int {
        guard let stream = opendir(directory) else { return -1 }
        defer { closedir(stream) }
        var count = 0
        while let entry = readdir(stream) {
            let isDots = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
            }
            if !isDots { count += 1 }
        }
        return count
    }
}

/// The descriptors and threads of the process at one moment.
///
/// Threads are counted in two groups: the soak's and the library's (every one of them has a name the soak gave it,
/// or is the main thread), and libdispatch's worker pool, which serves Swift's global executor. An `await` of a
/// nonisolated `async` function from an actor (such as `LoopThread.run`) runs that function on the global executor,
/// so the pool starts with the first such call; its threads come and go (an idle one exits after a few seconds), and
/// its manager keeps an epoll set, an eventfd and a timerfd for good once started.
struct ResourceSnapshot: CustomStringConvertible {
    /// Open descriptors.
    let descriptors: Int
    /// Threads, libdispatch's pool excluded.
    let threads: Int
    /// libdispatch's threads (named after its queues: `...-qos`, `...qos.overcommit`, `...-manager`).
    let dispatchThreads: Int
    /// Loops alive (made and not freed), whether or not their threads still run: a loop of an exited thread that
    /// something still references shows here and nowhere else (its descriptors are closed as its thread exits).
    let loops: Int

    /// The counts now.
    static func now() -> ResourceSnapshot {
        let names = ProcessFigures.threadList().map { $0.split(separator: " ", maxSplits: 1).dropFirst().first ?? "" }
        let dispatch = names.filter(isDispatchThread).count
        return ResourceSnapshot(
            descriptors: ProcessFigures.openDescriptorCount(), threads: names.count - dispatch,
            dispatchThreads: dispatch, loops: Loop.aliveCount)
    }

    /// Whether a thread of this name is one of libdispatch's: it names its threads after the end of its queues'
    /// labels (`com.apple.root.default-qos.overcommit` shows as `-qos.overcommit`).
    static func isDispatchThread(_ name: Substring) -> Bool {
        name.hasSuffix("-qos") || name.hasSuffix("qos.overcommit") || name.hasSuffix("-manager")
    }

    /// Whether descriptors, the soak's and library's threads and the loops are the same as in `other`.
    func matches(_ other: ResourceSnapshot) -> Bool {
        descriptors == other.descriptors && threads == other.threads && loops == other.loops
    }

    /// `N fds, M threads (+K libdispatch), L loops`.
    var description: String {
        "\(descriptors) fds, \(threads) threads" + (dispatchThreads > 0 ? " (+\(dispatchThreads) libdispatch)" : "")
            + ", \(loops) loops"
    }
}

extension ProcessFigures {
    /// What each open descriptor is (`3 -> anon_inode:[eventpoll]`), for a report whose counts do not match.
    static func descriptorList() -> [String] {
        names(in: "/proc/self/fd").compactMap { name in
            var target = [CChar](repeating: 0, count: 256)
            let count = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
            guard count >= 0 else { return nil }  // The directory's own descriptor, closed by now.
            return "\(name) -> \(String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))"
        }
    }

    /// Each thread's id and name (`4242 hub-ordered`), for a report whose counts do not match.
    static func threadList() -> [String] {
        names(in: "/proc/self/task").map { id in
            let descriptor = open("/proc/self/task/\(id)/comm", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return id }
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = max(0, read(descriptor, &buffer, buffer.count))
            return "\(id) \(String(decoding: buffer[0..<count], as: UTF8.self).filter { $0 != "\n" })"
        }
    }

    private static func names(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }
    }
}
