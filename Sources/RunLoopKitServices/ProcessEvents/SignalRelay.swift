import CRunLoopKitServices
import Glibc
import RunLoopKit
import RunLoopKitSystem

/// The process-wide half of signal sources that is not async-signal-safe: which signals may be watched, the
/// `sigaction` installed while a signal has watchers, and the disposition it replaced, restored when the last
/// watcher goes away. The C half (CRunLoopKitServices) holds the table the handler reads and the handler itself.
///
/// Threading: every function is safe from any thread (never from a signal handler). One lock serialises them,
/// and with them every change to the C table; the handler reads that table with atomics only, without the lock.
enum SignalRelay {
    /// One watcher's place in the table, and the process it was made in (after `fork()` the child ignores the
    /// parent's places, whose slots it has already cleared).
    struct Attachment: Sendable {
        let signal: CInt
        let slot: CInt
        let process: pid_t
    }

    /// Guarded by `state`'s lock; `sigaction` is a plain C struct (the handler is a C function pointer).
    private struct State: @unchecked Sendable {
        /// The process the C table's watchers belong to; 0 before the first use.
        var process: pid_t = 0
        /// Watchers per signal number.
        var watchers = [Int](repeating: 0, count: Int(CRUNLOOP_SIGNAL_LIMIT))
        /// Per signal number: the disposition the relay's handler replaced, while the handler is installed.
        var replaced: [sigaction?] = Array(repeating: nil, count: Int(CRUNLOOP_SIGNAL_LIMIT))

        /// In a child of `fork()`, forgets the parent's watchers (their eventfds are the parent's). The relay's
        /// handler stays installed wherever it was, so `replaced` is kept: the child's last watcher of a signal
        /// restores what the parent replaced.
        mutating func adoptCurrentProcess() {
            let current = getpid()
            guard current != process else { return }
            crunloop_signal_relay_reset(current)
            watchers = [Int](repeating: 0, count: Int(CRUNLOOP_SIGNAL_LIMIT))
            process = current
        }
    }

    private static let state = Locked(State())

    /// The disposition the relay installs: its handler, nothing else blocked while it runs, interrupted calls
    /// restarted where the kernel allows it, and the thread's alternate signal stack when it has one.
    private static var relayAction: sigaction {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = crunloop_signal_relay
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART | SA_ONSTACK
        return action
    }

    /// Signals the runtime or the kernel needs for itself: synchronous faults (a handler that returns re-runs the
    /// faulting instruction, and Swift's traps and crash reports depend on them) and `abort()`.
    private static let refused: [CInt: String] = [
        SIGKILL: "SIGKILL cannot be caught",
        SIGSTOP: "SIGSTOP cannot be caught",
        SIGSEGV: "SIGSEGV is a synchronous fault the runtime needs",
        SIGBUS: "SIGBUS is a synchronous fault the runtime needs",
        SIGILL: "SIGILL is a synchronous fault the runtime needs (Swift traps raise it)",
        SIGFPE: "SIGFPE is a synchronous fault the runtime needs",
        SIGTRAP: "SIGTRAP is a synchronous fault the runtime and debuggers need",
        SIGSYS: "SIGSYS is a synchronous fault (a bad system call)",
        SIGABRT: "SIGABRT is raised by abort(), which ends the process whatever the handler does",
    ]

    /// Throws `LoopError.Code.invalidArgument` unless `signal` may be watched.
    static func validate(_ signal: CInt) throws(LoopError) {
        let realTimeFirst = __libc_current_sigrtmin()
        let realTimeLast = __libc_current_sigrtmax()
        guard signal >= 1, signal <= realTimeLast, signal < CRUNLOOP_SIGNAL_LIMIT else {
            throw LoopError(.invalidArgument, message: "\(signal) is not a signal number (1...\(realTimeLast))")
        }
        if let reason = refused[signal] {
            throw LoopError(.invalidArgument, message: "signal \(signal) cannot be watched: \(reason)")
        }
        guard signal < firstReservedSignal || signal >= realTimeFirst else {
            throw LoopError(
                .invalidArgument, message: "signal \(signal) is reserved by the C library for its threads")
        }
    }

    /// The first signal number the C library reserves for itself (the real-time signals below SIGRTMIN).
    private static let firstReservedSignal: CInt = 32

    /// Makes `descriptor` (an eventfd) a watcher of `signal`, installing the relay's handler if the signal had
    /// no watcher: from now on every delivery of `signal` adds one to the eventfd's counter.
    /// - Throws: `LoopError.Code.invalidArgument` when the signal has `CRUNLOOP_SIGNAL_SLOTS` watchers
    ///   already; `LoopError.Code.systemCallFailed` when `sigaction` fails.
    static func attach(_ descriptor: CInt, to signal: CInt) throws(LoopError) -> Attachment {
        try state.withLock { state throws(LoopError) -> Attachment in
            state.adoptCurrentProcess()
            if state.replaced[Int(signal)] == nil { try refuseIfDispatchOwns(signal) }  // Else the relay's is.
            let slot = crunloop_signal_relay_attach(signal, descriptor)
            guard slot >= 0 else {
                throw LoopError(
                    .invalidArgument,
                    message: "signal \(signal) has \(CRUNLOOP_SIGNAL_SLOTS) sources already, the most it can have")
            }
            if state.replaced[Int(signal)] == nil {
                do throws(SystemError) {
                    state.replaced[Int(signal)] = try SignalAction.exchange(signal, for: relayAction)
                } catch {
                    crunloop_signal_relay_detach(signal, slot)
                    throw LoopError(systemCall: error, context: "installing the handler of signal \(signal)")
                }
            }
            state.watchers[Int(signal)] += 1
            return Attachment(signal: signal, slot: slot, process: state.process)
        }
    }

    /// Throws `LoopError.Code.invalidArgument` when Dispatch watches `signal` (its handler is the disposition). One
    /// owner per signal: on Linux, Dispatch reads the signal from a signalfd on its manager thread, and its handler
    /// blocks every signal in the thread that took it and sends it on to that thread. With the relay's handler in
    /// its place, whichever of them gets a delivery depends on the threads' masks, and the other never sees it.
    /// Called with the lock held.
    private static func refuseIfDispatchOwns(_ signal: CInt) throws(LoopError) {
        var current: sigaction
        do throws(SystemError) {
            current = try SignalAction.exchange(signal, for: nil)
        } catch {
            throw LoopError(systemCall: error, context: "reading the disposition of signal \(signal)")
        }
        guard crunloop_signal_handler_is_dispatchs(&current) != 0 else { return }
        throw LoopError(
            .invalidArgument,
            message: "signal \(signal) is watched by a Dispatch signal source (DispatchSource.makeSignalSource, as "
                + "swift-service-lifecycle's ServiceGroup uses for its signals): one owner per signal; let that owner "
                + "begin the shutdown (GracefulShutdown.begin()), see Docs/Services.md")
    }

    /// Withdraws a watcher. When this returns, the handler will not write to its eventfd again (the descriptor
    /// may be closed). The last watcher of a signal restores the disposition the relay replaced, unless
    /// someone else replaced the relay's handler meanwhile (theirs is left alone).
    static func detach(_ attachment: Attachment) {
        state.withLock { state in
            state.adoptCurrentProcess()
            guard attachment.process == state.process else { return }  // The parent's, already cleared in this child.
            let signal = attachment.signal
            crunloop_signal_relay_detach(signal, attachment.slot)
            state.watchers[Int(signal)] -= 1
            guard state.watchers[Int(signal)] == 0, let previous = state.replaced[Int(signal)] else { return }
            state.replaced[Int(signal)] = nil
            guard var current = try? SignalAction.exchange(signal, for: nil),
                crunloop_signal_relay_is_installed_in(&current) != 0
            else { return }
            _ = try? SignalAction.exchange(signal, for: previous)
        }
    }

    /// Takes the deliveries the relay counted for `attachment` since the last take. The watching source's loop
    /// thread.
    static func takeDeliveries(of attachment: Attachment) -> UInt64 {
        crunloop_signal_relay_take(attachment.signal, attachment.slot)
    }

    /// How many times the relay's handler ran for `signal` in this process (a fork child starts from its
    /// parent's count). Safe from any thread.
    static func deliveries(of signal: CInt) -> UInt64 {
        crunloop_signal_relay_deliveries(signal)
    }

    /// Whether the relay's handler is the current disposition of `signal`. Safe from any thread.
    static func isInstalled(for signal: CInt) -> Bool {
        guard var current = try? SignalAction.exchange(signal, for: nil) else { return false }
        return crunloop_signal_relay_is_installed_in(&current) != 0
    }
}
