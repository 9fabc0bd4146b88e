import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Calls a handler on a loop's thread when the process receives a chosen Unix signal (SIGINT, SIGTERM, SIGHUP,
/// SIGUSR1, SIGCHLD, SIGWINCH, ...), with the number of deliveries since the previous call.
///
/// Mechanism: while at least one source watches a signal, RunLoopKit's `sigaction` handler is installed for
/// it. Each delivery, on whichever thread the kernel picks, bumps a count per source watching the signal and adds
/// one to each such source's eventfd: atomics and `write(2)` only, nothing else runs in signal context. The
/// source's loop watches that eventfd like a ``FileDescriptorSource``, takes the count and calls the handler. So
/// nothing is lost between two calls (the count says how many deliveries were merged, by the kernel or by the
/// relay; the eventfd only wakes the loop, so even a failed wake-up write loses no delivery: it is reported with
/// the next one), several sources and loops may watch one signal (each sees every delivery), and the handler may do
/// anything. When the last source of a signal goes away, the disposition it replaced is restored. `signalfd`
/// is not used: it only works when the signal is blocked in every thread of the process, which a library
/// cannot arrange (threads started earlier, Dispatch's, the runtime's). See Docs/Signals.md.
///
/// The source watches from the moment it is created (the signal no longer has its previous effect, e.g.
/// SIGINT no longer ends the process); deliveries before it is added to a loop are reported once it is.
/// Refused with ``LoopError/Code/invalidArgument``: numbers outside 1...SIGRTMAX, SIGKILL and SIGSTOP (they
/// cannot be caught), the synchronous faults SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT, and
/// the real-time signals the C library keeps for itself (32 and 33). SIGPIPE is allowed: its handler returns
/// and the write fails with `EPIPE` instead of ending the process.
///
/// Threading: the initialiser, ``invalidate()``, ``isValid`` and the loop's `add`/`remove` are safe from any
/// thread (never from a C signal handler); the handler runs on the loop's thread with no RunLoopKit lock held,
/// and may invalidate its own source. A source belongs to at most one loop, in any number of its modes. A
/// signal sent to the process reaches some thread that does not block it; if every thread blocks it, it stays
/// pending and no source sees it.
public final class SignalSource: Sendable {
    /// The watched signal number.
    public let signal: CInt
    /// Among signal and descriptor sources ready in the same pass, lower orders are handled first.
    public let order: Int

    let handler: @Sendable (SignalSource, Int) -> Void
    /// The eventfd the relay adds one to per delivery; owned by the source, closed in `deinit`.
    let eventDescriptor: CInt
    private let attachment: SignalRelay.Attachment
    private let valid = Atomic<Bool>(true)
    /// The descriptor source that watches `eventDescriptor` in the source's loop, made by the first `add`.
    ///
    /// Weak: the loop holds the descriptor source, whose handler holds this source, so a source added to a loop
    /// lives as long as the loop keeps it (until invalidated, or its thread exits), like any other item.
    private let watcher = Locked<WeakDescriptorSource>(WeakDescriptorSource())

    /// Creates a source watching `signal`, replacing the signal's disposition from now until the last source
    /// of the signal is invalidated or released. Safe from any thread.
    ///
    /// - Parameters:
    ///   - signal: The signal number, e.g. `SIGTERM`.
    ///   - order: Among signal and descriptor sources ready in the same pass, lower orders are handled first.
    ///     Default 0.
    ///   - handler: Called on the loop's thread with the source and the number of deliveries since its last call
    ///     (at least 1).
    /// - Throws: ``LoopError/Code/invalidArgument`` for a signal that cannot be watched (see the type's
    ///   documentation) or one already watched by 1,024 sources; ``LoopError/Code/systemCallFailed`` when the
    ///   eventfd cannot be made (e.g. `EMFILE`) or `sigaction` fails.
    public init(
        signal: CInt,
        order: Int = 0,
        handler: @escaping @Sendable (SignalSource, Int) -> Void
    ) throws(LoopError) {
        try SignalRelay.validate(signal)
        let descriptor: CInt
        do {
            descriptor = try EventFD.create()
        } catch {
            throw LoopError(error, context: "creating the eventfd of a signal source")
        }
        let attachment: SignalRelay.Attachment
        do {
            attachment = try SignalRelay.attach(descriptor, to: signal)
        } catch {
            FileDescriptorCalls.close(descriptor)
            throw error
        }
        self.signal = signal
        self.order = order
        self.handler = handler
        self.eventDescriptor = descriptor
        self.attachment = attachment
    }

    deinit {
        if valid.load(ordering: .acquiring) { SignalRelay.detach(attachment) }
        FileDescriptorCalls.close(eventDescriptor)
    }

    /// Whether the source can still be added and handled. Safe from any thread.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Stops watching for good: removes the source from every mode of its loop and withdraws it from the signal,
    /// restoring the signal's previous disposition if this was its last source. Safe from any thread, including
    /// the source's own handler.
    ///
    /// After it returns no new handler call starts (one already running finishes), deliveries not yet handled
    /// are dropped, and the relay's C handler will not touch the source's eventfd again: to make sure of that it
    /// may wait, for the few microseconds it takes, for that handler to return on a thread receiving the signal
    /// at this moment.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        watcher.withLock { $0.source }?.invalidate()
        SignalRelay.detach(attachment)
    }

    /// Adds the source to `mode` of `loop`, making its descriptor source on the first add.
    func add(to loop: Loop, mode: Loop.Mode) throws(LoopError) {
        try watcher.withLock { watcher throws(LoopError) in
            guard isValid else {
                throw LoopError(.invalidated, message: "an invalidated item cannot be added to a loop")
            }
            try watcher.add(to: loop, mode: mode, making: makeDescriptorSource)
        }
    }

    /// The descriptor source in the source's loop, if it was added to one that still holds it.
    var descriptorSource: FileDescriptorSource? { watcher.withLock { $0.source } }

    private func makeDescriptorSource() throws(LoopError) -> FileDescriptorSource {
        try FileDescriptorSource(descriptor: eventDescriptor, events: .readable, order: order) { [self] events in
            guard !events.contains(.invalid) else { return }  // The eventfd is ours: only a refused change gets here.
            deliver()
        }
    }

    /// On the loop's thread: takes the deliveries counted since the last call and hands them to the handler.
    private func deliver() {
        guard isValid else { return }
        do {
            try EventFD.drain(eventDescriptor)
        } catch {
            trap("RunLoopKit: reading a signal source's eventfd failed: \(error)")
        }
        let count = SignalRelay.takeDeliveries(of: attachment)
        guard count > 0 else { return }
        handler(self, Int(clamping: count))
    }
}
