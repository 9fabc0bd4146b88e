import RunLoopKit
import RunLoopKitSystem
extension Loop {
    /// Adds a memory-pressure source to `mode` (or to every common mode, for ``Mode/common``). Safe from any thread.
    ///
    /// A firing since the source was created is reported at the loop's next pass in one of its modes.
    /// - Throws: ``LoopError/Code/invalidated``, ``LoopError/Code/ownedByAnotherLoop``,
    ///   ``LoopError/Code/loopTerminated``.
    public func add(_ source: MemoryPressureSource, to mode: Mode = .default) throws(LoopError) {
        try source.add(to: self, mode: mode)
    }

    /// Removes a memory-pressure source from `mode` (or from the common modes). Safe from any thread; removing what
    /// is not there does nothing. The trigger stays armed; a firing meanwhile is reported when the source is in a
    /// running mode again.
    public func remove(_ source: MemoryPressureSource, from mode: Mode = .default) {
        guard let descriptorSource = source.descriptorSource else { return }
        remove(descriptorSource, from: mode)
    }

    /// Whether `source` is in `mode` of this loop. Safe from any thread (see ``contains(_:in:)-(LoopSource,_)``).
    public func contains(_ source: MemoryPressureSource, in mode: Mode = .default) -> Bool {
        guard let descriptorSource = source.descriptorSource else { return false }
        return contains(descriptorSource, in: mode)
    }
}
