import Foundation
import Glibc
import RunLoopKit
import Synchronization

/// Helpers shared by the reliability tests (stress sizes, process counts, child processes).
enum Reliability {
    /// Whether the large soak sizes were asked for (`RUNLOOPKIT_SOAK=1`).
    static var soak: Bool { ProcessInfo.processInfo.environment["RUNLOOPKIT_SOAK"] == "1" }

    /// `normal` in an ordinary run, `soak` under `RUNLOOPKIT_SOAK=1`.
    static func size(_ normal: Int, soak soakSize: Int) -> Int { soak ? soakSize : normal }

    /// The open descriptor numbers of this process.
    static func openDescriptors() -> Set<CInt> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(names.compactMap { CInt($0) })
    }

    /// The number of threads of this process.
    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    /// Whether this process runs under ThreadSanitizer (its runtime is loaded).
    ///
    /// TSan does not support `fork()` in a multi-threaded process: it turns itself off in the child, whose next
    /// step can then hang on a lock another thread held at the fork (google/sanitizers#453, llvm-project#96600).
    /// The fork tests are skipped there; they run in the plain and AddressSanitizer runs.
    static let runningUnderThreadSanitizer: Bool = dlsym(nil, "__tsan_init") != nil

    /// Reports a measured figure (printed under `RUNLOOPKIT_TEST_FIGURES=1`, see ``TestFigures``), so the last
    /// run's numbers can be copied into Docs/Reliability.md.
    static func report(_ line: String) {
        TestFigures.report("[reliability] \(line)")
    }
}

/// A flag one thread sets and others read.
final class ReliabilityFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

extension Reliability {
    /// Waits for child `pid` for at most `timeout` (then kills it); answers its exit code, or the negated number of
    /// the signal that ended it, or nil if it had to be killed.
    static func waitForChild(_ pid: pid_t, timeout: Duration = .seconds(20)) -> Int32? {
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
    static func shellOutput(_ script: String) -> String {
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
