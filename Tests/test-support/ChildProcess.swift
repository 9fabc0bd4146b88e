import Foundation
import Glibc

/// Child processes for the child-exit source tests: spawning, waiting without reaping, zombie and pidfd checks.
package enum ChildProcess {
    /// Starts `arguments[0]` (an absolute path) with `posix_spawn`, every descriptor above 2 closed in the child
    /// (so it never holds another test's pipe open); answers its pid.
    package static func spawn(_ arguments: [String]) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        precondition(closeFrom(&actions, 3) == 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        precondition(status == 0, "posix_spawn \(arguments) failed: \(status)")
        return pid
    }

    /// A shell that exits with `code`.
    package static func exiting(with code: Int) -> pid_t {
        spawn(["/bin/sh", "-c", "exit \(code)"])
    }

    /// A child that sleeps for `seconds` (kill it).
    package static func sleeping(seconds: Int = 30) -> pid_t {
        spawn(["/bin/sleep", "\(seconds)"])
    }

    /// Blocks until child `pid` has exited, leaving it a zombie (not reaped).
    package static func waitForExitWithoutReaping(_ pid: pid_t) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
    }

    /// Whether `pid` is gone for good: not our child any more (reaped), `waitid` failing with `ECHILD`.
    package static func isReaped(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == -1 && errno == ECHILD
    }

    /// Kills and reaps `pid` (cleanup for children no source reaped).
    package static func killAndReap(_ pid: pid_t) {
        kill(pid, SIGKILL)
        var status: CInt = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    /// How many of this process's descriptors are pidfds.
    package static func openPidfdCount() -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.filter { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"))
                == "anon_inode:[pidfd]"
        }.count
    }
}

/// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module does not export.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func closeFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ lowest: CInt) -> CInt
