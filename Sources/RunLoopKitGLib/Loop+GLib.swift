import RunLoopKit
import RunLoopKitSystem

/// The GLib bridge, both ways: a loop inside a GLib main loop (``attachToGLib(context:mode:priority:)``), and a GLib
/// main context inside a loop (``driveGLib(context:mode:)``). GLib is loaded at run time: a process without
/// it gets ``RunLoopKit/LoopError/Code/libraryUnavailable``.
extension Loop {
    /// Runs this loop inside a GLib main context, for a thread that GLib owns: `g_main_loop_run`, `gtk_main`,
    /// `g_application_run`. Safe from any thread; the context must then be iterated on this loop's thread.
    ///
    /// Every item of the loop in `mode` runs inside GLib's iterations, woken with no polling timer: sources signalled
    /// by other threads, blocks, timers, descriptor sources, and on `main` Dispatch's main queue and with it
    /// `@MainActor` work. Work sent before GLib's loop starts is served by its first iteration; nothing needs priming.
    ///
    /// ```
    /// try Loop.main.attachToGLib()   // before gtk_main(), g_main_loop_run(...), g_application_run(...)
    /// ```
    ///
    /// - Parameters:
    ///   - context: The `GMainContext` (the pointer a GLib binding holds), or `nil` for GLib's default context, the
    ///     one `gtk_main` and `g_application_run` iterate on the main thread.
    ///   - mode: The mode each pass runs. The default, `Loop.Mode.default`, is what `run()` runs, and on `main` a
    ///     common mode, where the main queue is served. `Loop.Mode.common` names no single mode and is refused.
    ///   - priority: The GLib priority of the loop's source among the context's others; default `0`
    ///     (`G_PRIORITY_DEFAULT`, that of input events and GIO). GLib dispatches only the most urgent ready sources of
    ///     an iteration, so a loop that is always busy holds off GTK's redraws (`G_PRIORITY_HIGH_IDLE + 20`) until
    ///     it is idle; `200` (`G_PRIORITY_DEFAULT_IDLE`) lets them go first.
    /// - Returns: The attachment, whose ``GLibAttachment/invalidate()`` takes the loop out again. It stays attached
    ///   until then, whether or not the result is kept.
    /// - Throws: `LoopError`: `libraryUnavailable` when GLib is not installed (`symbolMissing`: too old);
    ///   `invalidMode` for `Loop.Mode.common`; `loopTerminated` when the loop's thread has exited; `systemCallFailed`
    ///   when its `Loop.pollDescriptor` cannot be made (no descriptor left); `alreadyBridged` when the
    ///   loop is attached already (a second attachment would run every pass twice): invalidate the first to attach
    ///   again.
    @discardableResult
    public func attachToGLib(
        context: OpaquePointer? = nil, mode: Mode = .default, priority: Int32 = 0
    ) throws(LoopError) -> GLibAttachment {
        let glib = try GLibFunctions.shared()
        guard mode != .common else {
            throw LoopError(
                .invalidMode, message: "a loop runs one mode at a time in GLib; .common names a set of modes")
        }
        guard !isTerminated else { throw LoopError(.loopTerminated, message: "\(self): its thread has exited") }
        try makePollDescriptor()  // What GLib will poll; made here, where a failure can be told.
        let claim = GLibAttachment.slots.claim(self) {
            GLibAttachment(loop: self, context: context, mode: mode, priority: priority, glib: glib)
        }
        guard case .made(let attachment) = claim else {
            throw LoopError(
                .alreadyBridged,
                message: "\(self) is attached to a GLib main context already; invalidate that attachment first (a "
                    + "second would run every pass twice)")
        }
        return attachment
    }

    /// Drives a GLib main context from this loop, for a thread that RunLoopKit owns (`run()`). Loop thread only
    /// (traps elsewhere): the thread acquires the context.
    ///
    /// GLib's timeouts, idles, descriptor watches, child watches and GIO's asynchronous calls then run in the loop's
    /// passes while it runs `mode`, at GLib's rates and priorities, with no polling: the loop sleeps on GLib's
    /// descriptors and wakes at GLib's next timeout. A descriptor GLib polls may be one the app also watches with
    /// a `FileDescriptorSource`.
    ///
    /// ```
    /// try Loop.main.driveGLib()      // then Loop.main.run()
    /// ```
    ///
    /// - Parameters:
    ///   - context: The `GMainContext`, or `nil` for GLib's default context. No other thread may be iterating it.
    ///   - mode: Where GLib is served; default `Loop.Mode.common`, every common mode, like the main queue.
    /// - Returns: The driver, whose ``GLibDriver/invalidate()`` stops it. It runs until then, whether or not the
    ///   result is kept; its items never keep a run going by themselves.
    /// - Throws: `LoopError`: `libraryUnavailable` or `symbolMissing` as above; `contextOwnedElsewhere` when
    ///   another thread has acquired the context; the loop's own error when it cannot take the driver's items
    ///   (`systemCallFailed` with no descriptor left for its epoll set, say); `alreadyBridged` when the loop drives a
    ///   context already.
    @discardableResult
    public func driveGLib(context: OpaquePointer? = nil, mode: Mode = .common) throws(LoopError) -> GLibDriver {
        require(isCurrent, "RunLoopKitGLib: Loop.driveGLib(context:mode:) must be called on the loop's own thread")
        let glib = try GLibFunctions.shared()
        let claim = try GLibDriver.slots.claim(self) { () throws(LoopError) in
            try GLibDriver(loop: self, context: context, mode: mode, glib: glib)
        }
        guard case .made(let driver) = claim else {
            throw LoopError(
                .alreadyBridged,
                message: "\(self) drives a GLib main context already; invalidate that driver first (a second would "
                    + "iterate the context twice)")
        }
        return driver
    }
}
