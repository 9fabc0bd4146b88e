import CRunLoopShims
import Foundation
import Glibc
import RunLoopKit
import Synchronization

/// Helpers shared by the reliability tests (stress sizes, process counts, child processes).
package enum Reliability {
    /// Whether the large soak sizes were asked for (`RUNLOOPKIT_SOAK=1`).
    package static var soak: Bool { ProcessInfo.processInfo.environment["RUNLOOPKIT_SOAK"] == "1" }

    /// `normal` in an ordinary run, `soak` under `RUNLOOPKIT_SOAK=1`.
    package static func size(_ normal: Int, soak soakSize: Int) -> Int { soak ? soakSize : normal }

    /// The open descriptor numbers of this process.
    package static func openDescriptors() -> Set<CInt> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(names.compactMap { CInt($0) })
    }

    /// The number of threads of this process.
    package static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    /// Whether this process runs under ThreadSanitizer (its runtime is loaded).
    ///
    /// TSan does not support `fork()` in a multi-threaded process: it turns itself off in the child, whose next
    /// step can then hang on a lock another thread held at the fork (google/sanitizers#453, llvm-project#96600).
    /// The fork tests are skipped there; they run in the plain and AddressSanitizer runs.
    package static let runningUnderThreadSanitizer: Bool = dlsym(nil, "__tsan_init") != nil

    /// Whether this process runs under AddressSanitizer (its runtime is loaded). Its fake stacks hold a frame's
    /// locals away from the thread's stack, so a local's address says nothing of how deep the stack is.
    package static let runningUnderAddressSanitizer: Bool = dlsym(nil, "__asan_init") != nil

    /// Reports a measured figure (printed under `RUNLOOPKIT_TEST_FIGURES=1`, see ``TestFigures``), so the last
    /// run's numbers can be copied into Docs/Reliability.md.
    package static func report(_ line: String) {
        TestFigures.report("[reliability] \(line)")
    }
}

/// A flag one thread sets and others read.
package final class ReliabilityFlag: Sendable {
    private let value = Atomic<Bool>(false)
    package init() {}
    package func set() { value.store(true, ordering: .sequentiallyConsistent) }
    package var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

extension Reliability {
    /// `fork()`, once every other thread of this process is asleep (two readings of `/proc/self/task` in a row find
    /// none running), or after `timeout` regardless.
    ///
    /// The Swift runtime guards its type-metadata and conformance caches with mutexes that have no fork handlers: a
    /// thread filling one of them at the fork leaves it locked for good in the child, whose first use of a type not
    /// seen before then blocks forever (a hang in about 1 of 300 forks from an exit-test child, in
    /// `swift_getWitnessTable` and `swift_getGenericMetadata`). A thread that fills a cache is running, so forking
    /// while all others sleep (in `epoll_wait`, or idle in the cooperative pool) keeps the child's runtime usable.
    package static func forkWhenOtherThreadsSleep(timeout: Duration = .seconds(5)) -> pid_t {
        let me = crunloop_gettid()
        var quietReadings = 0
        _ = waitUntil(timeout: timeout) {
            quietReadings = otherThreadsSleep(besides: me) ? quietReadings + 1 : 0
            return quietReadings >= 2
        }
        return fork()
    }

    /// Whether every thread of this process but `me` is in interruptible sleep (state `S` in its `stat`).
    private static func otherThreadsSleep(besides me: pid_t) -> Bool {
        guard let directory = opendir("/proc/self/task") else { return false }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let thread = pid_t(name), thread != me else { continue }
            guard let state = threadState("/proc/self/task/\(name)/stat"), state == "S" else { return false }
        }
        return true
    }

    /// The state letter of a `/proc/…/stat` file: the first character after the parenthesised command name.
    private static func threadState(_ path: String) -> Character? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[close...].dropFirst().first { $0 != " " }
    }
}

extension Reliability {
    /// Waits for child `pid` for at most `timeout` (then kills it); answers its exit code, or the negated number of
    /// the signal that ended it, or nil if it had to be killed.
    package static func waitForChild(_ pid: pid_t, timeout: Duration = .seconds(20)) -> Int32? {
        var status: Int32 = 0
        let ended = waitUntil(timeout: timeout) { waitpid(pid, &status, WNOHANG) == pid }
        guard ended else {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            return nil
        }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : -signal
    }

    /// Runs `/bin/sh -c script` and answers what it wrote to its standard output.
    package static func shellOutput(_ script: String) -> String {
        var descriptors: [CInt] = [0, 0]
        precondition(pipe(&descriptors) == 0)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, descriptors[1], 1)
        posix_spawn_file_actions_addclose(&actions, descriptors[0])
        let words: [String] = ["/bin/sh", "-c", script]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/bin/sh", &actions, nil, arguments, environ)
        posix_spawn_file_actions_destroy(&actions)
        close(descriptors[1])
        precondition(status == 0, "posix_spawn failed: \(status)")
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptors[0], &buffer, buffer.count)
            if count <= 0 { break }
            output += buffer[0..<count]
        }
        close(descriptors[0])
        _ = waitForChild(pid)
        return String(decoding: output, as: UTF8.self)
    }
}
