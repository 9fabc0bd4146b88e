import Glibc
import RunLoopKit
import RunLoopKitSystem

/// How a child process ended, as a ``ChildExitSource`` reports it to its handler.
///
/// A plain value: safe to pass to and read from any thread.
public enum ChildExitStatus: Sendable, Hashable, CustomStringConvertible {
    /// The child called `exit` (or returned from `main`) with `code`, the low 8 bits of the value it passed.
    case exited(code: CInt)
    /// The child was terminated by `signal` (e.g. `SIGKILL`); `coreDumped` tells whether it left a core dump.
    case signalled(signal: CInt, coreDumped: Bool)
    /// Someone else reaped the child before the source could (`waitid` failed with `ECHILD`): a `waitpid(-1, ...)`
    /// loop, a `SIGCHLD` handler that reaps, or `SIGCHLD` set to `SIG_IGN` (the kernel then reaps children
    /// itself). The child has exited, but how is known only to whoever reaped it.
    case reapedElsewhere

    /// `exited(3)`, `signalled(SIGKILL)`, `signalled(SIGABRT, core dumped)` or `reapedElsewhere`.
    public var description: String {
        switch self {
        case .exited(let code): "exited(\(code))"
        case .signalled(let signal, let coreDumped):
            "signalled(\(Self.name(of: signal))\(coreDumped ? ", core dumped" : ""))"
        case .reapedElsewhere: "reapedElsewhere"
        }
    }

    /// The status `waitid(2)` reported.
    init(_ exit: PidFD.Exit) {
        switch exit.code {
        case CInt(CLD_EXITED): self = .exited(code: exit.status)
        case CInt(CLD_DUMPED): self = .signalled(signal: exit.status, coreDumped: true)
        default: self = .signalled(signal: exit.status, coreDumped: false)  // CLD_KILLED, the only other WEXITED code.
        }
    }

    private static func name(of signal: CInt) -> String {
        let names: [CInt: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
            SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
        ]
        return names[signal] ?? "signal \(signal)"
    }
}
