/// Item counts: how many sources, descriptor sources, timers and observers each mode holds, readable from any thread
/// without parsing ``Loop/description``.
extension Loop {
    /// How many items of each kind a mode holds: a snapshot for leak checks and dashboards.
    ///
    /// Every item counts, those that helpers add included (a `SignalSource` or `ChildExitSource` is a descriptor
    /// source, a ``PassWorkQueue`` or ``PhaseTaskScheduler`` adds observers). A one-shot timer that fired has left
    /// its modes and no longer counts, until it is re-armed.
    public struct ItemCounts: Sendable, Hashable, CustomStringConvertible {
        /// Custom sources (``LoopSource``).
        public var sources: Int
        /// Descriptor sources (``FileDescriptorSource``, and the helpers built on it).
        public var descriptorSources: Int
        /// Timers (``LoopTimer``); one-shot callbacks (``Loop/schedule(at:tolerance:in:_:file:line:)``) are not items.
        public var timers: Int
        /// Observers (``LoopObserver``).
        public var observers: Int

        /// Counts with the given values, zero by default. Made by the loop only, so the type can gain kinds
        /// without breaking code that reads it.
        init(sources: Int = 0, descriptorSources: Int = 0, timers: Int = 0, observers: Int = 0) {
            self.sources = sources
            self.descriptorSources = descriptorSources
            self.timers = timers
            self.observers = observers
        }

        /// All four counts added up.
        public var total: Int { sources + descriptorSources + timers + observers }

        /// The counts in one line, e.g. `2 sources, 1 descriptor source, 0 timers, 3 observers`.
        public var description: String {
            func count(_ value: Int, _ kind: String) -> String { "\(value) \(kind)\(value == 1 ? "" : "s")" }
            return [
                count(sources, "source"), count(descriptorSources, "descriptor source"), count(timers, "timer"),
                count(observers, "observer"),
            ].joined(separator: ", ")
        }
    }

    /// How many items of each kind `mode` holds; for ``Mode/common``, how many were added to the common modes
    /// (each of them also counts in every common mode). Safe from any thread.
    ///
    /// On the loop's thread the answer is exact, changes just sent from other threads included. From another thread
    /// it is a snapshot of what the loop's thread has applied: an add, remove or invalidation sent from another
    /// thread shows once the loop applied it, before its next pass; each kind's count is exact at the moment it is
    /// read, the four one after another. A mode the loop has never had, and every mode of a loop whose thread has
    /// exited, count zero. Reading costs a lock the loop's passes never take, and four atomic loads; keeping the
    /// counts costs the loop one plain store per add or remove, nothing per pass.
    public func itemCounts(in mode: Mode = .default) -> ItemCounts {
        if isCurrent { applyChanges() }
        guard !isTerminated else { return ItemCounts() }
        let cells = publishedModes.withLock { mode == .common ? $0.commonCounts : $0.counts[mode] }
        return cells?.snapshot ?? ItemCounts()
    }

    /// The item counts of every mode the loop has (``allModes``, without ``Mode/common``), by mode. Safe from any
    /// thread, as fresh as ``itemCounts(in:)``; empty for a loop whose thread has exited.
    public var itemCountsByMode: [Mode: ItemCounts] {
        if isCurrent { applyChanges() }
        guard !isTerminated else { return [:] }
        return publishedModes.withLock { $0.counts }.mapValues(\.snapshot)
    }
}
