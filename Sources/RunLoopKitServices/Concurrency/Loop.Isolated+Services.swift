import Glibc
import RunLoopKit
import RunLoopKitSystem

/// The services' sources and exit handlers through ``RunLoopKit/Loop/Isolated``: handlers that are not `@Sendable`,
/// run on the loop's thread in the isolation the view was made in (main-actor code on `Loop.main`, an actor whose
/// executor is the loop), with the same arguments as the plain initialisers. Like every item the view makes, each
/// source is pinned to the view's loop.
extension Loop.Isolated {
    /// Makes a ``SignalSource`` (see ``SignalSource/init(signal:order:handler:)``) whose handler runs on the loop's
    /// thread in the caller's isolation.
    /// - Throws: What ``SignalSource/init(signal:order:handler:)`` throws.
    public func makeSignalSource(
        signal: CInt,
        order: Int = 0,
        handler: @escaping (SignalSource, Int) -> Void
    ) throws(LoopError) -> SignalSource {
        pinned(
            try SignalSource(
                signal: signal, order: order,
                handler: unsafeBitCast(handler, to: (@Sendable (SignalSource, Int) -> Void).self)))
    }

    /// Makes a ``ChildExitSource`` (see ``ChildExitSource/init(pid:order:handler:)``) whose handler runs on the
    /// loop's thread in the caller's isolation.
    /// - Throws: What ``ChildExitSource/init(pid:order:handler:)`` throws.
    public func makeChildExitSource(
        pid: pid_t,
        order: Int = 0,
        handler: @escaping (ChildExitSource, ChildExitStatus) -> Void
    ) throws(LoopError) -> ChildExitSource {
        pinned(
            try ChildExitSource(
                pid: pid, order: order,
                handler: unsafeBitCast(handler, to: (@Sendable (ChildExitSource, ChildExitStatus) -> Void).self)))
    }

    /// Makes a ``FileChangeSource`` with no watch yet (see ``FileChangeSource/init(order:handler:)``) whose handler
    /// runs on the loop's thread in the caller's isolation.
    /// - Throws: What ``FileChangeSource/init(order:handler:)`` throws.
    public func makeFileChangeSource(
        order: Int = 0,
        handler: @escaping (FileChangeSource, FileChange) -> Void
    ) throws(LoopError) -> FileChangeSource {
        pinned(
            try FileChangeSource(
                order: order,
                handler: unsafeBitCast(handler, to: (@Sendable (FileChangeSource, FileChange) -> Void).self)))
    }

    /// Makes a ``FileChangeSource`` watching `path` (see ``FileChangeSource/init(watching:for:order:handler:)``)
    /// whose handler runs on the loop's thread in the caller's isolation.
    /// - Throws: What ``FileChangeSource/init(watching:for:order:handler:)`` throws.
    public func makeFileChangeSource(
        watching path: String,
        for changes: FileChangeSource.Changes = .all,
        order: Int = 0,
        handler: @escaping (FileChangeSource, FileChange) -> Void
    ) throws(LoopError) -> FileChangeSource {
        let source = try makeFileChangeSource(order: order, handler: handler)
        do throws(LoopError) {
            try source.addWatch(path, for: changes)
        } catch {
            source.invalidate()  // Nothing stays open or bound, as when the plain initialiser fails.
            throw error
        }
        return source
    }

    /// Makes a ``MemoryPressureSource`` (see ``MemoryPressureSource/init(trigger:path:order:environment:handler:)``)
    /// whose handler runs on the loop's thread in the caller's isolation.
    /// - Throws: What ``MemoryPressureSource/init(trigger:path:order:environment:handler:)`` throws.
    public func makeMemoryPressureSource(
        trigger: MemoryPressureTrigger,
        path: String? = nil,
        order: Int = 0,
        environment: [String: String]? = nil,
        handler: @escaping (MemoryPressureSource, MemoryPressureSource.Event) -> Void
    ) throws(LoopError) -> MemoryPressureSource {
        pinned(
            try MemoryPressureSource(
                trigger: trigger, path: path, order: order, environment: environment,
                handler: unsafeBitCast(
                    handler, to: (@Sendable (MemoryPressureSource, MemoryPressureSource.Event) -> Void).self)))
    }

    /// Adds an exit handler to `shutdown` (see ``GracefulShutdown/onExit(order:_:)``) that runs on the loop's thread
    /// in the caller's isolation: on `Loop.main`, main-actor code that closes the service's listeners and flushes
    /// its state directly, with no `MainActor.assumeIsolated`.
    ///
    /// `shutdown` must run on this view's loop (its ``GracefulShutdown/loop``): its handlers run on that loop's
    /// thread, so a shutdown of another loop traps, naming both.
    /// - Returns: What ``GracefulShutdown/onExit(order:_:)`` answers: `false` when the shutdown's exit handlers have
    ///   started already and the handler was dropped.
    @discardableResult
    public func onExit(of shutdown: GracefulShutdown, order: Int = 0, _ handler: @escaping () -> Void) -> Bool {
        if shutdown.loop !== loop {
            trap(
                "RunLoopKitServices: Loop.Isolated.onExit(of:) was given a GracefulShutdown of "
                    + "\(shutdown.loop.loopDescriptionForTraps) through the view of \(loop.loopDescriptionForTraps): "
                    + "its exit handlers run on its own loop's thread; make the view there")
        }
        return shutdown.onExit(order: order, unsafeBitCast(handler, to: (@Sendable () -> Void).self))
    }
}
