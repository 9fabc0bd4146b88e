import RunLoopKit
import RunLoopKitSystem
extension Loop {
    /// Adds a child-exit source to `mode` (or to every common mode, for ``Mode/common``). Safe from any thread.
    ///
    /// The loop keeps the source alive until it fires or is invalidated. A child that already exited fires on the
    /// first pass that runs one of the source's modes.
    /// - Throws: ``LoopError/Code/invalidated`` (fired, invalidated, or its loop's thread exited),
    ///   ``LoopError/Code/ownedByAnotherLoop``, ``LoopError/Code/loopTerminated``.
    public func add(_ source: ChildExitSource, to mode: Mode = .default) throws(LoopError) {
        try source.schedule(on: self, in: mode)
    }

    /// Removes a child-exit source from `mode` (or from the common modes). Safe from any thread; removing what is
    /// not there does nothing.
    ///
    /// A source in no mode does not fire but stays valid (and keeps its pidfd) until invalidated; the child's exit
    /// is reported when it is added to a running mode again.
    public func remove(_ source: ChildExitSource, from mode: Mode = .default) {
        guard let descriptorSource = source.scheduledDescriptorSource else { return }
        remove(descriptorSource, from: mode)
    }

    /// Whether `source` is in `mode`. Safe from any thread (see ``contains(_:in:)-(LoopSource,_)``).
    public func contains(_ source: ChildExitSource, in mode: Mode = .default) -> Bool {
        guard let descriptorSource = source.scheduledDescriptorSource else { return false }
        return contains(descriptorSource, in: mode)
    }
}
