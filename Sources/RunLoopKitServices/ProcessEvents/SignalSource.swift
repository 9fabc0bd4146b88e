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
/// source's loop watches that eventfd like a `FileDescriptorSource`, takes the count and calls the handler. So
/// nothing is lost between two calls (the count says how many deliveries were merged, by the kernel or by the
/// relay; the eventfd only wakes the loop, so even a failed wake-up write loses no delivery: it is reported with
/// the next one), several sources and loops may watch one signal (each sees every delivery), and the handler may do
/// anything. When the last source of a signal goes away, the disposition it replaced is restored. `signalfd`
/// is not used: it only works when the signal is blocked in every thread of the process, which a library
/// cannot arrange (threads started earlier, Dispatch's, the runtime's). See Docs/Signals.md.
///
/// The source watches from the moment it is created (the signal no longer has its previous effect, e.g.
/// SIGINT no longer ends the process); deliveries before it is added to a loop are reported once it is.
/// Refused with `LoopError.Code.invalidArgument`: numbers outside 1...SIGRTMAX, SIGKILL and SIGSTOP (they
/// cannot be caught), the synchronous faults SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT, and
/// the real-time signals the C library keeps for itself (32 and 33), and a signal Dispatch watches (a
/// `DispatchSource.makeSignalSource` handler is its disposition: one owner per signal). SIGPIPE is allowed: its handler returns
/// and the write fails with `EPIPE` instead of ending the process.
///
/// Threading: the initialiser, `LoopItem.invalidate()`, `LoopItem.isValid` and the loop's `add`/`remove` are safe
/// from any thread (never from a C signal handler); the handler runs on the loop's thread with no RunLoopKit lock
/// held, and may invalidate its own source. A source belongs to at most one loop, in any number of its modes; while
/// in a loop, the loop keeps it alive. Like every `DescriptorBackedSource`, it may carry a rate limit and need not
/// keep runs alive (`LoopEventItem`). A signal sent to the process reaches some thread that does not block it; if
/// every thread blocks it, it stays pending and no source sees it.
public final class SignalSource: DescriptorBackedSource, @unchecked Sendable {  // Unchecked: as its base.
    /// The watched signal number.
    public let signal: CInt

    let handler: @Sendable (SignalSource, Int) -> Void
    /// Its place in the relay's table; withdrawn once, at invalidation or release, whichever comes first.
    private let attachment: SignalRelay.Attachment
    private let attached = Atomic<Bool>(true)

    /// Creates a source watching `signal`, replacing the signal's disposition from now until the last source
    /// of the signal is invalidated or released. Safe from any thread.
    ///
    /// - Parameters:
    ///   - signal: The signal number, e.g. `SIGTERM`.
    ///   - order: Among descriptor-backed sources ready in the same pass, lower orders are handled first. Default 0.
    ///   - handler: Called on the loop's thread with the source and the number of deliveries since its last call
    ///     (at least 1).
    /// - Throws: `LoopError.Code.invalidArgument` for a signal that cannot be watched (see the type's
    ///   documentation), one already watched by 1,024 sources, or one a Dispatch signal source watches (Dispatch
    ///   owns it then: swift-service-lifecycle's `ServiceGroup` takes its signals so; see Docs/Services.md); `LoopError.Code.systemCallFailed` when the
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
            throw LoopError(systemCall: error, context: "creating the eventfd of a signal source")
        }
        let attachment: SignalRelay.Attachment
        do {
            attachment = try SignalRelay.attach(descriptor, to: signal)
        } catch {
            FileDescriptorCalls.close(descriptor)
            throw error
        }
        self.signal = signal
        self.handler = handler
        self.attachment = attachment
        do {
            try super.init(
                descriptor: descriptor, events: .readable, order: order, ownsDescriptor: true,
                callout: { source, events in unsafeDowncast(source, to: SignalSource.self).deliver(events) },
                invalidationStep: { source in unsafeDowncast(source, to: SignalSource.self).withdraw() })
        } catch {
            SignalRelay.detach(attachment)  // The base closed the eventfd (only a closed one can make it throw).
            throw error
        }
    }

    deinit {
        withdraw()  // Before the base closes the eventfd: the relay's C handler must never write to it again.
    }

    /// Withdraws the source from its signal, restoring the signal's previous disposition if it was its last source.
    /// After it returns, the relay's C handler will not touch the source's eventfd again: to make sure of that it may
    /// wait, for the few microseconds it takes, for that handler to return on a thread receiving the signal at this
    /// moment. Deliveries not yet handled are dropped. Once; any thread.
    private func withdraw() {
        guard attached.exchange(false, ordering: .acquiringAndReleasing) else { return }
        SignalRelay.detach(attachment)
    }

    /// On the loop's thread: takes the deliveries counted since the last call and hands them to the handler.
    private func deliver(_ events: Events) {
        guard !events.contains(.invalid), isValid else { return }  // The eventfd is ours: only a refused change fails.
        let drained: Void? = withOwnedDescriptor { descriptor in
            do {
                try EventFD.drain(descriptor)
            } catch {
                trap("RunLoopKit: reading a signal source's eventfd failed: \(error)")
            }
        }
        guard drained != nil else { return }  // Invalidated on another thread meanwhile.
        let count = SignalRelay.takeDeliveries(of: attachment)
        guard count > 0 else { return }
        handler(self, Int(clamping: count))
    }
}
