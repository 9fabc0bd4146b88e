import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Keeps systemd's watchdog fed from a loop's own passes: `WATCHDOG=1` every half of `WATCHDOG_USEC`, sent by a
/// repeating timer in the loop's common modes. While the loop is stalled (a handler that blocks, a deadlock) the
/// keep-alives stop, and systemd restarts the service once `WatchdogSec=` passes without one: the watchdog then
/// watches the loop, not just the process.
///
/// The timer does not keep runs alive, and a stall does not pile keep-alives up afterwards (a repeating timer skips
/// missed fire times). The keep-alives go on until ``stop()`` or the loop's thread exits, whether or not the
/// returned object is kept. Use it on the loop whose health matters, typically `Loop.main`.
///
/// Threading: ``start(on:notifier:environment:)``, ``stop()``, ``keepAlivesSent`` and ``lastError`` are safe from any
/// thread; the keep-alives are sent on the loop's thread.
public final class SystemdWatchdog: Sendable {
    /// How often a keep-alive is sent: half the watchdog timeout systemd set (`WATCHDOG_USEC`), as sd_notify(3)
    /// advises.
    public let interval: Duration
    private let timer: LoopTimer
    private let record = Record()

    /// What the keep-alives did: shared with the timer's handler.
    private final class Record: Sendable {
        let sent = Atomic<Int>(0)
        let failure = Locked<LoopError?>(nil)
    }

    /// Starts the keep-alives on `loop` when systemd asked for them: `WATCHDOG_USEC` is set and `WATCHDOG_PID`, if
    /// set, is this process. Answers `nil` otherwise (no watchdog, or it watches another process). Sends the first
    /// keep-alive at once. `environment` defaults to the process's (pass a dictionary to aim at a stand-in socket, as
    /// tests do); `notifier` defaults to one made from the same environment. Any thread.
    /// - Throws: `LoopError.Code.invalidArgument` when `WATCHDOG_USEC` is not a positive decimal number of
    ///   microseconds or `WATCHDOG_PID` not a process id (as `sd_watchdog_enabled(3)` answers `-EINVAL`),
    ///   `LoopError.Code.invalidInterval` when the timeout is beyond what a timer takes,
    ///   `LoopError.Code.loopTerminated` when the loop's thread has exited, and what the first keep-alive threw
    ///   (see ``SystemdNotifier/notify(_:)``).
    public static func start(
        on loop: Loop = .current,
        notifier: SystemdNotifier? = nil,
        environment: [String: String]? = nil
    ) throws(LoopError) -> SystemdWatchdog? {
        func variable(_ name: String) -> String? {
            environment.map { $0[name] } ?? ProcessEnvironment.value(name)
        }
        guard
            let interval = try keepAliveInterval(
                timeout: variable("WATCHDOG_USEC"), pid: variable("WATCHDOG_PID"), processID: getpid())
        else { return nil }
        let notifier = notifier ?? SystemdNotifier(environment: environment)
        let watchdog = try SystemdWatchdog(interval: interval, first: loop.now + interval, notifier: notifier)
        _ = try notifier.watchdogKeepAlive()
        watchdog.record.sent.add(1, ordering: .relaxed)
        try loop.add(watchdog.timer, to: .common)
        return watchdog
    }

    /// How often process `processID` is to send keep-alives, as `WATCHDOG_USEC` (`timeout`) and `WATCHDOG_PID`
    /// (`pid`) say: half the timeout, or `nil` when no watchdog is asked for (no `WATCHDOG_USEC`) or it watches
    /// another process. Checks the text only, as `sd_watchdog_enabled(3)` does (an empty value is malformed).
    /// - Throws: `LoopError.Code.invalidArgument` as ``start(on:notifier:environment:)`` says.
    package static func keepAliveInterval(
        timeout: String?, pid: String?, processID: pid_t
    ) throws(LoopError) -> Duration? {
        guard let timeout else { return nil }
        guard isDecimal(timeout), let microseconds = Int64(timeout), microseconds > 0 else {
            throw LoopError(
                .invalidArgument, message: "WATCHDOG_USEC \"\(timeout)\" is not a positive number of microseconds")
        }
        if let pid {
            guard isDecimal(pid), let watched = Int32(pid), watched > 0 else {
                throw LoopError(.invalidArgument, message: "WATCHDOG_PID \"\(pid)\" is not a process id")
            }
            guard watched == processID else { return nil }
        }
        return .microseconds(microseconds) / 2
    }

    /// Whether `text` is digits only, at least one (no sign, no space: what systemd writes).
    private static func isDecimal(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// `first`: the first keep-alive after the one sent at once, on the loop's time (``Loop/now``: the loop may run on
    /// virtual time).
    private init(interval: Duration, first: Loop.Instant, notifier: SystemdNotifier) throws(LoopError) {
        self.interval = interval
        let record = self.record
        timer = try LoopTimer(at: first, repeating: interval, tolerance: interval / 10) { _ in
            do throws(LoopError) {
                if try notifier.watchdogKeepAlive() { record.sent.add(1, ordering: .relaxed) }
            } catch {
                record.failure.withLock { $0 = error }
            }
        }
        timer.keepsRunAlive = false
    }

    /// How many keep-alives were sent so far.
    public var keepAlivesSent: Int { record.sent.load(ordering: .relaxed) }

    /// The last error a keep-alive met (the service manager's socket went away, say), or `nil`. The keep-alives go
    /// on regardless.
    public var lastError: LoopError? { record.failure.withLock { $0 } }

    /// Stops the keep-alives for good (systemd will then restart the service if its watchdog is still on: send
    /// `STOPPING=1` first when shutting down). Any thread; later calls do nothing.
    public func stop() {
        timer.invalidate()
    }
}
