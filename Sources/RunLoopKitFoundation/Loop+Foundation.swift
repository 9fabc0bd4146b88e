import CoreFoundation
import Foundation
import RunLoopKit

/// The Foundation bridge: a loop and Foundation's `RunLoop` on one thread, whichever of the two runs it.
extension Loop {
    /// Joins this loop and Foundation's run loop of its thread, both ways: while Foundation runs the thread
    /// (`RunLoop.main.run()`, `RunLoop.current.run(mode:before:)`), every item of the loop runs inside Foundation's
    /// iterations; while the loop runs it (`run()`), Foundation's `Timer`s, `RunLoop.perform` blocks,
    /// `NotificationQueue` and `FileHandle` notifications run inside the loop's passes. No polling either way. The
    /// loop's timers are timers to Foundation (a pass for them never ends `RunLoop.run(mode:before:)`, and
    /// `RunLoop.limitDate(forMode:)` sees them); a pass for other threads' work or a ready descriptor is a handled
    /// source, as a port's message would be.
    ///
    /// ```
    /// try Loop.main.bridgeToFoundation()   // then RunLoop.main.run(), or Loop.main.run(): both serve both
    /// ```
    ///
    /// `main` may be bridged from any thread; another loop only from its own thread (Foundation offers no other
    /// thread's `RunLoop`). See ``FoundationBridge`` for how each direction works and what it costs.
    ///
    /// - Parameter mode: The loop's mode that Foundation's iterations run; default `Loop.Mode.default`. In the other
    ///   direction Foundation runs, in its mode of the same name, whenever the loop runs one of its common modes.
    /// - Returns: The bridge, whose ``FoundationBridge/invalidate()`` parts the two loops. It lasts until then,
    ///   whether or not the result is kept.
    /// - Throws: `LoopError`: `alreadyBridged` when the loop is bridged already; `notOnLoopThread` for
    ///   a loop other than `main` called from another thread; `invalidMode` for `Loop.Mode.common`; `loopTerminated`
    ///   when the loop's thread has exited; `systemCallFailed` when the loop's `Loop.pollDescriptor`,
    ///   which CF's run loop waits on, cannot be made (no descriptor left, say).
    @discardableResult
    public func bridgeToFoundation(mode: Mode = .default) throws(LoopError) -> FoundationBridge {
        guard mode != .common else {
            throw LoopError(
                .invalidMode, message: "Foundation runs one mode of the loop at a time; .common names a set of modes")
        }
        guard !isTerminated else {
            throw LoopError(.loopTerminated, message: "\(self): its thread has exited")
        }
        let runLoop: CFRunLoop
        if isMain {
            runLoop = CFRunLoopGetMain()
        } else if isCurrent {
            runLoop = CFRunLoopGetCurrent()
        } else {
            throw LoopError(
                .notOnLoopThread,
                message: "\(self) can only be bridged on its own thread: Foundation gives no other thread's RunLoop")
        }
        try makePollDescriptor()  // What CF's run loop will wait on; made here, where a failure can be told.
        let bridge: FoundationBridge
        switch FoundationBridge.slots.claim(self, make: { FoundationBridge(loop: self, mode: mode, runLoop: runLoop) })
        {
        case .made(let made):
            bridge = made
        case .taken(let existing):
            throw LoopError(
                .alreadyBridged,
                message:
                    "\(self) is bridged to Foundation already (mode \(existing.mode)); invalidate that bridge first")
        }
        do {
            try bridge.addLoopSide()
        } catch {
            bridge.invalidate()
            throw LoopError(
                error.code, errno: error.errno, message: "\(self) refused the bridge's items: \(error.message)")
        }
        return bridge
    }
}
