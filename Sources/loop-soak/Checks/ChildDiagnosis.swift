import Glibc
import RunLoopKit

/// What the soak can find out about a child whose exit its source never reported: the child's state, the pidfds
/// naming it, the hub's epoll set as the kernel lists it, and the hub's loop as it describes itself.
enum ChildDiagnosis {
    /// One report for child `pid`, watched on `hub` in `mode`.
    static func describe(pid: pid_t, hub: Hub, mode: Loop.Mode) -> String {
        var lines = ["child \(pid) watched on \(hub.name) in \(mode): \(childState(pid))"]
        lines.append("/proc/\(pid): " + processState(pid))
        let pidfds = pidfds(naming: pid)
        lines.append("pidfds naming it: \(pidfds.isEmpty ? "none" : pidfds.map(String.init).joined(separator: ", "))")
        let epoll = hub.loop.pollDescriptor
        lines.append("epoll set \(epoll) of \(hub.name) (/proc/self/fdinfo):")
        lines += fdinfo(epoll).filter { $0.hasPrefix("tfd:") }.map { "  " + $0 }
        let description = (try? hub.thread.performAndWait { Loop.current.description }) ?? "(hub stopped)"
        lines += description.split(separator: "\n").map { "  " + $0 }
        return lines.joined(separator: "\n    ")
    }

    /// Whether child `pid` has exited: a zombie, or already reaped (by its source, which reports it next).
    static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return errno == ECHILD }
        return info._sifields._sigchld.si_pid == pid
    }

    /// Running, exited and not reaped (a zombie), or gone (reaped).
    private static func childState(_ pid: pid_t) -> String {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else {
            return "not a child any more (reaped; errno \(errno))"
        }
        return info._sifields._sigchld.si_pid == pid ? "exited, not reaped (zombie)" : "still running"
    }

    /// What the kernel says of process `pid`: its program, state, signal masks, what it waits in.
    private static func processState(_ pid: pid_t) -> String {
        var target = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/\(pid)/exe", &target, target.count - 1)
        let program =
            count > 0 ? String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        let wanted = ["State:", "SigBlk:", "SigPnd:", "ShdPnd:", "SigIgn:", "SigCgt:"]
        let status = lines(of: "/proc/\(pid)/status").filter { line in wanted.contains { line.hasPrefix($0) } }
        let waitingIn = lines(of: "/proc/\(pid)/wchan").first ?? "?"
        let syscall = lines(of: "/proc/\(pid)/syscall").first ?? "?"
        let stack = lines(of: "/proc/\(pid)/stack").prefix(8)
        return "exe \(program); \(status.joined(separator: "; ")); wchan \(waitingIn); syscall \(syscall); "
            + "stack \(stack.joined(separator: " < "))"
    }

    /// The descriptors that are pidfds of `pid`.
    private static func pidfds(naming pid: pid_t) -> [CInt] {
        ProcessFigures.descriptorList().compactMap { line -> CInt? in
            guard line.hasSuffix("anon_inode:[pidfd]"), let number = CInt(line.prefix { $0 != " " }) else { return nil }
            return fdinfo(number).contains("Pid:\t\(pid)") ? number : nil
        }
    }

    /// The lines of `/proc/self/fdinfo/<descriptor>`.
    private static func fdinfo(_ descriptor: CInt) -> [String] {
        lines(of: "/proc/self/fdinfo/\(descriptor)")
    }

    /// The lines of the file at `path`.
    private static func lines(of path: String) -> [String] {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return [] }
        defer { close(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(file, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
