import CRunLoopKitGLib
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// A loop running inside a GLib main context: a `GSource` of GLib's whose dispatch runs one pass of the loop. Made by
/// ``RunLoopKit/Loop/attachToGLib(context:mode:priority:)``.
///
/// The source polls the loop's `Loop.pollDescriptor` (`g_source_add_unix_fd`, `G_IO_IN`), which is
/// readable whenever the loop has something to do: another thread signalled a source, posted a block or main-queue
/// work, a timer is due (the loop's timerfd is in that set), a watched descriptor is ready. GLib then dispatches the
/// source, which calls `Loop.runPass(in:)`. Whenever the loop does not count as asleep (the descriptor then says
/// nothing), the source's `prepare` says "ready, timeout 0" for the next iteration instead of waiting for the
/// descriptor: after a pass that left more work ready (such a pass leaves the loop awake), for the very first
/// iteration, so work sent before GLib's loop started is served at once, and after anyone else ran the loop. Work
/// GLib's own callbacks make on the loop's thread (a block posted, a timer added, a source signalled), between passes
/// or inside a modal GLib loop a handler runs, asks for the next pass the same way, with no eventfd write. There is
/// no timer and no polling: an idle loop costs GLib nothing but one descriptor in its poll set.
///
/// A run of the loop's own nested in GLib's dispatch (`Loop.run(in:for:returnAfterSourceHandled:)` from a
/// handler or a GLib callback, in a common mode) iterates the context itself while it lasts, as
/// ``RunLoopKit/Loop/driveGLib(context:mode:)`` would: GTK keeps drawing and GLib's timeouts keep firing, where the
/// thread would otherwise sit in the loop's wait with GLib frozen. The attachment starts that driver at the run's
/// entry and ends it at its exit; runs in a mode that is not common leave GLib alone, as they leave the main queue.
///
/// The attachment lasts until ``invalidate()``, whether or not this handle is kept.
///
/// Threading: ``invalidate()`` and ``isValid`` are safe from any thread. The context must be iterated on the loop's
/// thread (a dispatch elsewhere traps, naming both threads).
public final class GLibAttachment: @unchecked Sendable {
    // Unchecked Sendable: `source` is an immutable pointer to a GSource, whose functions are thread-safe; the rest is
    // immutable or atomic.

    /// The loop that runs inside GLib.
    public let loop: Loop
    /// The mode each pass runs.
    public let mode: Loop.Mode

    private let glib: GLibFunctions
    /// The GSource, with a reference of this object's own until ``invalidate()``.
    private let source: UnsafeMutableRawPointer
    private let valid = Atomic<Bool>(true)
    /// Whether code of GLib's on the loop's thread made work for the loop (a callback posted a block, added a timer,
    /// signalled a source) while the loop counted as asleep: set by the loop's host-work handler, which needs no
    /// eventfd write, and read by the source's `prepare`, which then asks for a pass; cleared by the pass. Loop
    /// thread; atomic (relaxed) only because the handler is `@Sendable`.
    private let workMadeOnThread = Atomic<Bool>(false)
    /// For the attachment a ``GLibDriver`` keeps in the context it drives: whether the iteration in progress is the
    /// driver's own (the loop runs already, further out), when the attachment must neither ask for nor run a pass.
    private let isInert: (@Sendable () -> Bool)?
    /// The ``RunLoopKit/Loop/runDepth`` of the pass this attachment is running, `-1` while none: a driver of the same
    /// loop does nothing in it (GLib's own iteration goes on after it). Loop thread only.
    nonisolated(unsafe) private(set) var hostPassDepth = -1
    /// The context as the caller named it (`nil`: GLib's default).
    nonisolated(unsafe) private let context: OpaquePointer?
    /// Whether the attachment watches the loop's own runs (`Loop.watchOwnRuns`), to start and end ``nestedDriver``:
    /// from its first `prepare` on the loop's thread until it is invalidated; never for a driver's own attachment.
    /// Loop thread only.
    nonisolated(unsafe) private var watchesOwnRuns = false
    /// Iterates the context during a run of the loop's own nested in GLib's dispatch; `nil` outside such a run.
    /// Loop thread only.
    nonisolated(unsafe) private var nestedDriver: GLibDriver?
    /// The ``RunLoopKit/Loop/runDepth`` of the run ``nestedDriver`` serves. Loop thread only.
    nonisolated(unsafe) private var nestedDriverDepth = -1

    /// An attachment of `loop` to `context`. `isInert`: the attachment a ``GLibDriver`` keeps in the context it drives
    /// (no nested-run driver of its own); its closure says when the iteration in progress is the driver's.
    init(
        loop: Loop, context: OpaquePointer?, mode: Loop.Mode, priority: Int32, glib: GLibFunctions,
        isInert: (@Sendable () -> Bool)? = nil
    ) {
        self.loop = loop
        self.mode = mode
        self.glib = glib
        self.isInert = isInert
        self.context = context
        let size = UInt32(MemoryLayout<RLKGBridgeSource>.size)
        source = glib.sourceNew(attachmentSourceFuncs, size)!
        // The source holds this object until GLib finalizes it (`finalize` releases it).
        source.storeBytes(
            of: Unmanaged.passRetained(self).toOpaque(), toByteOffset: bridgeOffset, as: UnsafeMutableRawPointer.self)
        _ = glib.sourceAddUnixFD(source, loop.pollDescriptor, UInt32(GLibPollSet.input))
        glib.sourceSetPriority(source, priority)
        // A handler may run a nested GLib main loop (a modal dialog): the loop keeps running inside it, as a nested
        // run of the loop would (CF's rule: main-queue work does not drain again inside main-queue work).
        glib.sourceSetCanRecurse(source, 1)
        glib.sourceSetName(source, "RunLoopKit loop")
        if isInert == nil {
            loop.setHostWorkHandler(by: self) { [weak self] in self?.workMadeOnThreadWhileAsleep() }
        }
        let target = glib.referencedContext(context)
        _ = glib.sourceAttach(source, target)
        glib.mainContextUnref(target)
    }

    /// The attachment of each attached loop: one at a time. (A driver's own attachment takes no slot.)
    static let slots = LoopBridgeSlots<GLibAttachment> { $0.isValid }

    /// Whether the loop still runs inside the context. Safe from any thread.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Takes the loop out of the context for good (`g_source_destroy`). Safe from any thread; later calls do nothing.
    ///
    /// On the context's thread no pass starts after it returns. From another thread, a pass GLib has already begun
    /// to dispatch finishes; none starts after that.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        glib.sourceDestroy(source)
        glib.sourceUnref(source)  // The source is not touched again: `valid` is false.
        Self.slots.release(self, of: loop)
        if isInert == nil { loop.removeHostWorkHandler(by: self) }
        // The watcher and a nested run's driver are the loop thread's: ended there (from another thread, by the
        // loop's next pass in a common mode, where a nested run's driver works; a loop that exited has neither).
        if loop.isCurrent {
            endNestedRunWatch()
        } else {
            _ = loop.perform(in: .common) { [self] in endNestedRunWatch() }
        }
    }

    /// Starts watching the loop's own runs, once (the attachment may be made on another thread). Loop thread only.
    private func watchOwnRunsOnce() {
        guard !watchesOwnRuns, isInert == nil, isValid else { return }
        watchesOwnRuns = true
        // Weak: the loop keeps the call, and this object must go once GLib finalizes its source.
        loop.watchOwnRuns(by: self) { [weak self] entering, depth in
            self?.ownRunChanged(entering: entering, depth: depth)
        }
    }

    /// Ends the watch of the loop's own runs and a nested run's driver in progress. Loop thread only.
    private func endNestedRunWatch() {
        if watchesOwnRuns {
            loop.stopWatchingOwnRuns(by: self)
            watchesOwnRuns = false
        }
        nestedDriver?.invalidate()
        nestedDriver = nil
        nestedDriverDepth = -1
    }

    /// A run of the loop's own (not a pass of this attachment's) starts or ends: one inside GLib's dispatch, from a
    /// handler of the loop or from a GLib callback, gets a driver of the context that lasts until it exits.
    private func ownRunChanged(entering: Bool, depth: Int) {
        guard entering else {
            guard depth == nestedDriverDepth, let driver = nestedDriver else { return }
            nestedDriver = nil
            nestedDriverDepth = -1
            driver.invalidate()
            return
        }
        // Deeper runs share the outer one's driver; runs outside GLib's dispatch have no GLib iteration to keep up.
        guard isValid, nestedDriver == nil, glib.mainDepth() > 0 else { return }
        // Refused only when another thread has acquired the context (then this thread's dispatch of it has trapped
        // already) or the loop refuses the driver's items: the run then goes on without GLib, as before.
        nestedDriver = try? GLibDriver(loop: loop, context: context, mode: .common, glib: glib, nestedIn: self)
        if nestedDriver != nil { nestedDriverDepth = depth }
    }

    /// Whether the iteration in progress is the one a nested-run driver runs (the loop runs already, further out).
    /// Loop thread only.
    private var isNestedDriversIteration: Bool {
        guard let nestedDriver else { return false }
        return nestedDriver.isIteratingAtCurrentDepth
    }

    /// The loop's host-work handler: work was made on the loop's thread while it counted as asleep. Made by code GLib
    /// dispatched (a callback between passes, or inside a modal GLib loop a handler runs, where the outer pass is
    /// still in progress), or outside any run of the loop (the app between two `g_main_loop_run`s), it must reach the
    /// next `prepare`: nothing else would make GLib run a pass. Made by a run of the loop's own outside GLib's
    /// dispatch (a driver of this context re-arming its alarm after an iteration in which this attachment ran a
    /// pass), that run serves it before it sleeps: asking GLib for a pass there would make every pass ask for
    /// another. Loop thread.
    private func workMadeOnThreadWhileAsleep() {
        if glib.mainDepth() > 0 || loop.runDepth == 0 { workMadeOnThread.store(true, ordering: .relaxed) }
    }

    /// The attachment a GSource made by ``init(loop:context:mode:priority:glib:)`` belongs to.
    fileprivate static func of(_ source: UnsafeMutableRawPointer?) -> GLibAttachment {
        let bridge = source!.load(fromByteOffset: bridgeOffset, as: UnsafeMutableRawPointer.self)
        return Unmanaged<GLibAttachment>.fromOpaque(bridge).takeUnretainedValue()
    }

    /// Whether GLib's next iteration must run a pass without waiting for the descriptor: GLib's code made work on the
    /// loop's thread since the last pass, or the loop does not count as asleep. Other threads wake the loop through its descriptor only while it counts as asleep, which a pass that
    /// finds nothing more to do leaves it in; a pass that leaves work ready leaves it awake, and so does a run of the
    /// loop by anyone else (a GLib callback that runs it for a while, say): a pass then makes the descriptor
    /// trustworthy again. Before the first pass the loop does not count as asleep either, so GLib's first iteration
    /// runs one. From the source's `prepare`.
    fileprivate var isPassDue: Bool {
        if let isInert, isInert() { return false }
        if loop.isCurrent {  // Elsewhere, `dispatch` traps; the loop thread's state is not read here.
            if isNestedDriversIteration { return false }
            if !watchesOwnRuns { watchOwnRunsOnce() }
        }
        return workMadeOnThread.load(ordering: .relaxed) || !loop.isWaiting
    }

    /// One pass, from the source's `dispatch`; answers whether the source stays.
    fileprivate func dispatch() -> Bool {
        guard isValid else { return false }
        require(
            loop.isCurrent,
            "RunLoopKitGLib: the GMainContext a loop is attached to is iterated on another thread than the loop's own "
                + "(\(loop)); attach the loop of the thread that runs the GLib main loop")
        if let isInert, isInert() { return true }
        if isNestedDriversIteration { return true }
        let outer = hostPassDepth
        hostPassDepth = loop.runDepth + 1
        // A driver's attachment runs the mode the loop is running (its own mode may be the set `.common`).
        let passMode = mode == .common ? (loop.currentMode ?? .default) : mode
        // The pass's answer (more work ready) needs no keeping: such a pass leaves the loop awake, which is what the
        // next `prepare` reads, and nothing but another pass makes it count as asleep before then.
        workMadeOnThread.store(false, ordering: .relaxed)
        _ = loop.runPass(in: passMode)
        hostPassDepth = outer
        return true
    }
}

/// Where ``RLKGBridgeSource/bridge`` sits in the source.
private let bridgeOffset = MemoryLayout<RLKGBridgeSource>.offset(of: \.bridge)!

/// The functions of the attachment's source type, shared by every attachment and never freed (GLib keeps a pointer
/// to them in each source).
nonisolated(unsafe) private let attachmentSourceFuncs: UnsafeMutablePointer<RLKGSourceFuncs> = {
    // Unsafe: written once here, then only read, by GLib.
    let funcs = UnsafeMutablePointer<RLKGSourceFuncs>.allocate(capacity: 1)
    funcs.initialize(
        to: RLKGSourceFuncs(
            prepare: { source, timeout in
                // Ready at once (timeout 0) while a pass is due; otherwise no timeout of ours: the descriptor wakes GLib.
                let due = GLibAttachment.of(source).isPassDue
                timeout?.pointee = due ? 0 : -1
                return due ? 1 : 0
            },
            check: nil,  // GLib then calls the source ready when its descriptor polled readable.
            dispatch: { source, _, _ in
                GLibAttachment.of(source).dispatch() ? 1 : 0
            },
            finalize: { source in
                let bridge = source!.load(fromByteOffset: bridgeOffset, as: UnsafeMutableRawPointer.self)
                Unmanaged<GLibAttachment>.fromOpaque(bridge).release()
            },
            reservedClosureCallback: nil,
            reservedClosureMarshal: nil))
    return funcs
}()
