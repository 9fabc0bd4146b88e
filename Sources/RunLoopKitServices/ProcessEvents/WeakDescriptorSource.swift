import RunLoopKit
import RunLoopKitSystem
/// A descriptor source held weakly: how a composite item (``SignalSource``, ``ChildExitSource``, ``FileChangeSource``,
/// ``MemoryPressureSource``) refers to the descriptor source its loop owns, without a reference cycle through that
/// source's handler.
struct WeakDescriptorSource: Sendable {
    weak var source: FileDescriptorSource?

    /// Adds the composite item's descriptor source to `mode` of `loop`: the one an earlier add made, else one `make`
    /// makes now (the first add, or after the loop let the last one go). `prepare` sets it up before the add; the
    /// source is kept once the loop holds it. Called with the item's lock held.
    mutating func add(
        to loop: Loop,
        mode: Loop.Mode,
        making make: () throws(LoopError) -> FileDescriptorSource,
        preparing prepare: (FileDescriptorSource) -> Void = { _ in }
    ) throws(LoopError) {
        let added: FileDescriptorSource
        if let existing = source {
            added = existing
        } else {
            added = try make()
        }
        prepare(added)
        try loop.add(added, to: mode)
        source = added
    }
}
