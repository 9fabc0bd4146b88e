import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Ends a service in order when it is asked to stop (SIGTERM from systemd, SIGINT from a terminal, or ``begin()``),
/// on the service's loop, and hands the program an exit status (sd-event's exit sources, in one helper).
///
/// What happens, once, on the loop's thread:
/// 1. `STOPPING=1` goes to the service manager (a no-op outside systemd; see ``SystemdNotifier``).
/// 2. The signal sources are removed, so a second signal meets the signal's previous disposition: by default the
///    process ends at once, killed by it. A shutdown that hangs can always be cut short that way.
/// 3. The exit handlers run, lowest order first (equal orders in the order they were added). This is where the
///    service stops accepting work: it closes its listeners, refuses new requests, flushes what it owes.
/// 4. The `LoopThread`s handed over are stopped (each finishes the work it accepted) on a thread of their own,
///    with a deadline, while the loop keeps running, so work they send back to the loop still runs.
/// 5. The loop's run is stopped (`Loop.stop()`): `run()` returns, and ``exitStatus`` says how it went.
///
/// Threading: every member is safe from any thread; the exit handlers run on the loop's thread, in a callout of the
/// loop (isolated to the caller's actor when added through `Loop.Isolated.onExit(of:order:_:)`).
public final class GracefulShutdown: Sendable {
    /// The exit status when every `LoopThread` stopped before the deadline.
    public static let cleanExitStatus: CInt = 0
    /// The exit status when some `LoopThread` had not stopped by the deadline (`EX_SOFTWARE`).
    public static let drainTimedOutExitStatus: CInt = 70

    /// The loop the shutdown runs on, whose run it ends.
    public let loop: Loop
    private let threads: [LoopThread]
    private let threadDeadline: Duration
    private let notifier: SystemdNotifier
    private let sources = Locked<[SignalSource]>([])
    private let state = Locked(State())

    private struct State {
        var handlers: [(order: Int, handler: @Sendable () -> Void)] = []
        var phase = Phase.serving
        /// Whether ``begin()`` posted the start to the loop (it runs there, and may find a signal came first).
        var beginPosted = false
        var signal: CInt?
        var status = GracefulShutdown.cleanExitStatus
    }

    private enum Phase {
        case serving, stopping, finished
    }

    /// Watches `signals` on `loop` (default: SIGTERM and SIGINT on `Loop.main`) and stops the service when one
    /// arrives. Any thread.
    /// - Parameters:
    ///   - loop: The service's loop, whose `run()` the shutdown ends.
    ///   - signals: The signals that begin the shutdown; empty: only ``begin()`` does.
    ///   - threads: Worker threads to stop after the exit handlers ran.
    ///   - threadDeadline: How long the workers may take to finish the work they accepted; default 10 s.
    ///   - notifier: Where `STOPPING=1` goes; default: `NOTIFY_SOCKET` of the process.
    /// - Throws: What ``SignalSource/init(signal:order:handler:)`` and adding it throw.
    public init(
        loop: Loop = .main,
        signals: [CInt] = [SIGTERM, SIGINT],
        threads: [LoopThread] = [],
        threadDeadline: Duration = .seconds(10),
        notifier: SystemdNotifier = SystemdNotifier()
    ) throws(LoopError) {
        self.loop = loop
        self.threads = threads
        self.threadDeadline = threadDeadline
        self.notifier = notifier
        do throws(LoopError) {
            for signal in signals {
                // Weak: the loop holds the source, which must not keep the shutdown alive.
                let source = try SignalSource(signal: signal) { [weak self] _, _ in self?.start(signal: signal) }
                sources.withLock { $0.append(source) }
                try loop.add(source, to: .common)
            }
        } catch {
            for source in sources.withLock({ $0 }) { source.invalidate() }
            throw error
        }
    }

    /// A shutdown released before it began stops watching its signals (their previous disposition applies again).
    deinit {
        for source in sources.withLock({ $0 }) { source.invalidate() }
    }

    /// Adds an exit handler: it runs on the loop's thread when the shutdown begins, lowest `order` first. Any thread.
    ///
    /// The handler is called in a callout of ``loop`` (from the signal source's handler, or from a block that
    /// ``begin()`` queued), on that loop's thread and in no actor's isolation: it is `@Sendable`, so it cannot touch
    /// main-actor state without `MainActor.assumeIsolated`. For a handler isolated where it is added (main-actor code
    /// on `Loop.main`, an actor whose executor is the loop), add it through the loop's isolated view instead:
    /// `Loop.main.assumeIsolated().onExit(of: shutdown) { server.close() }` (see
    /// `Loop.Isolated.onExit(of:order:_:)`).
    ///
    /// - Returns: `true` when the handler was added and will run; `false` when the shutdown's exit handlers have
    ///   started already: the handler is dropped and never runs (run what it would do yourself).
    @discardableResult
    public func onExit(order: Int = 0, _ handler: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.phase == .serving else { return false }
            let position = state.handlers.firstIndex { $0.order > order } ?? state.handlers.endIndex
            state.handlers.insert((order, handler), at: position)
            return true
        }
    }

    /// Begins the shutdown without a signal (a "quit" command, a fatal condition): its steps run on the loop's
    /// thread, as for a signal. Any thread.
    ///
    /// - Returns: `true` when this call set the shutdown going (a signal arriving meanwhile may begin it first, with
    ///   the same steps); `false` when it was under way already (begun by a signal or an earlier call), or when the
    ///   loop's thread has exited, so that nothing can run the steps: ``isShuttingDown`` stays `false` then.
    @discardableResult
    public func begin() -> Bool {
        let claimed = state.withLock { state -> Bool in
            guard state.phase == .serving, !state.beginPosted else { return false }
            state.beginPosted = true
            return true
        }
        guard claimed else { return false }
        if loop.perform({ [self] in start(signal: nil) }) { return true }
        state.withLock { $0.beginPosted = false }  // The loop's thread has exited: nothing was set going.
        return false
    }

    /// Whether the shutdown has begun.
    public var isShuttingDown: Bool { state.withLock { $0.phase != .serving } }

    /// The signal that began the shutdown, or `nil` (not begun, or begun by ``begin()``).
    public var signal: CInt? { state.withLock { $0.signal } }

    /// The status for the program to exit with once `run()` returned: ``cleanExitStatus``, or
    /// ``drainTimedOutExitStatus`` when a worker thread had not stopped by the deadline.
    public var exitStatus: CInt { state.withLock { $0.status } }

    /// The shutdown's steps 1 to 4 (see the type). Loop thread.
    private func start(signal: CInt?) {
        let handlers: [(order: Int, handler: @Sendable () -> Void)]? = state.withLock { state in
            guard state.phase == .serving else { return nil }
            state.phase = .stopping
            state.signal = signal
            return state.handlers
        }
        guard let handlers else { return }
        _ = try? notifier.stopping()
        for source in sources.withLock({ $0 }) { source.invalidate() }
        for (_, handler) in handlers { handler() }
        guard !threads.isEmpty else { return finish(status: Self.cleanExitStatus) }
        let deadline = try? LoopTimer(at: loop.now + threadDeadline) { [self] _ in
            finish(status: Self.drainTimedOutExitStatus)
        }
        if let deadline { try? loop.add(deadline, to: .common) }
        let drain = ThreadDrain(threads) { [self] in
            loop.perform { [self] in
                deadline?.invalidate()
                finish(status: Self.cleanExitStatus)
            }
        }
        if !drain.start() { finish(status: Self.drainTimedOutExitStatus) }
    }

    /// Step 5, once: records `status` and ends the loop's run. Loop thread.
    private func finish(status: CInt) {
        let first = state.withLock { state -> Bool in
            guard state.phase == .stopping else { return false }
            state.phase = .finished
            state.status = status
            return true
        }
        if first { loop.stop() }
    }
}

/// Stops worker threads on a detached thread of its own, then calls `done` there.
private final class ThreadDrain: @unchecked Sendable {  // Unchecked: immutable after init.
    let threads: [LoopThread]
    let done: @Sendable () -> Void

    init(_ threads: [LoopThread], done: @escaping @Sendable () -> Void) {
        self.threads = threads
        self.done = done
    }

    /// Starts the draining thread; `false` when no thread could be made.
    func start() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()
        do throws(SystemError) {
            let thread = try ThreadCalls.start(
                { pointer in
                    let drain = Unmanaged<ThreadDrain>.fromOpaque(pointer!).takeRetainedValue()
                    for thread in drain.threads { thread.stop() }
                    drain.done()
                    return nil
                }, with: context)
            try? ThreadCalls.detach(thread)  // Just made, joinable: cannot fail.
            return true
        } catch {
            Unmanaged<ThreadDrain>.fromOpaque(context).release()
            return false
        }
    }
}
