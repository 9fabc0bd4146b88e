import RunLoopKit
import RunLoopKitSystem
extension Loop {
    /// Adds a file-change source to `mode` (or to every common mode, for ``Mode/common``). Safe from any thread.
    ///
    /// Changes queued since the source was created are reported at the loop's next pass in one of its modes.
    /// - Throws: ``LoopError/Code/invalidated``, ``LoopError/Code/ownedByAnotherLoop``,
    ///   ``LoopError/Code/loopTerminated``.
    public func add(_ source: FileChangeSource, to mode: Mode = .default) throws(LoopError) {
        try source.add(to: self, mode: mode)
    }

    /// Removes a file-change source from `mode` (or from the common modes). Safe from any thread; removing what is
    /// not there does nothing. The source keeps its watches: changes wait in the kernel's queue until it is in a
    /// running mode again.
    public func remove(_ source: FileChangeSource, from mode: Mode = .default) {
        guard let descriptorSource = source.descriptorSource else { return }
        remove(descriptorSource, from: mode)
    }

    /// Whether `source` is in `mode` of this loop. Safe from any thread (see ``contains(_:in:)-(LoopSource,_)``).
    public func contains(_ source: FileChangeSource, in mode: Mode = .default) -> Bool {
        guard let descriptorSource = source.descriptorSource else { return false }
        return contains(descriptorSource, in: mode)
    }
}
