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
    /// - Throws: `LoopError.Code.invalidArgument` when `WATCHDOG_USEC` is not a positive number of microseconds,
    ///   `LoopError.Code.loopTerminated` when the loop's thread has exited, and what the first keep-alive threw
    ///   (see ``SystemdNotifier/notify(_:)``).
    public static func start(
        on loop: Loop = .current,
        notifier: SystemdNotifier? = nil,
        environment: [String: String]? = nil
    ) throws(LoopError) -> SystemdWatchdog? {
        func variable(_ name: String) -> String? {
            environment.map { $0[name] } ?? getenv(name).map { String(cString: $0) }
        }
        guard let text = variable("WATCHDOG_USEC"), !text.isEmpty else { return nil }
        guard let microseconds = Int64(text), microseconds > 0 else {
            throw LoopError(.invalidArgument, message: "WATCHDOG_USEC \"\(text)\" is not a positive number")
        }
        if let pid = variable("WATCHDOG_PID"), !pid.isEmpty, pid != String(getpid()) { return nil }
        let notifier = notifier ?? SystemdNotifier(environment: environment)
        let watchdog = try SystemdWatchdog(interval: .microseconds(microseconds) / 2, notifier: notifier)
        _ = try notifier.watchdogKeepAlive()
        watchdog.record.sent.add(1, ordering: .relaxed)
        try loop.add(watchdog.timer, to: .common)
        return watchdog
    }

    private init(interval: Duration, notifier: SystemdNotifier) throws(LoopError) {
        self.interval = interval
        let record = self.record
        timer = try LoopTimer(after: interval, repeating: interval, tolerance: interval / 10) { _ in
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
