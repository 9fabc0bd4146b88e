/// The hooks ``LoopThread`` stops with: its worker refuses blocks from other threads (the first hook, for that
/// helper alone), runs every block and job accepted before (``modeForLoopThreadDrain()``, for it alone too, names a
/// mode to run for the oldest), then closes the inbox (``closeInbox()``, which the teardown also uses). Public API
/// cannot do this: it cannot close a loop to other threads' blocks while the loop still runs, nor say which blocks
/// are queued.
extension Loop {
    /// From now on, blocks sent from other threads are refused (``perform(in:_:file:line:)-(Mode,_,_,_)`` answers `false`);
    /// actor jobs and item changes are still taken until the thread exits. For a ``LoopThread``'s stop, so that
    /// every block accepted before it runs in the drain and none is accepted after. Loop thread only.
    func refuseBlocksForLoopThreadDrain() {
        var taken = Inbox.Contents(blocks: BlockQueue(), changes: [])
        inbox.refuseBlocks(into: &taken)
        absorb(&taken)
    }

    /// A mode whose zero-length pass would run the oldest queued block or actor job (applying changes first), `nil`
    /// when nothing is queued: for the final drain of a ``LoopThread``. The default mode serves work that may run
    /// there (work for the common modes included), else its first mode by name. Loop thread only.
    func modeForLoopThreadDrain() -> Mode? {
        applyChanges()
        guard let block = blocks.first else { return nil }
        switch block.modes {
        case .defaultMode, .commonModes:
            return .default
        case .named(let modes):
            if modes.contains(where: { $0 == .default || $0 == .common }) { return .default }
            return modes.min { $0.name < $1.name }!
        }
    }

    /// Closes the inbox for good (the thread exits, or a ``LoopThread`` ends its drain), applying the changes and
    /// taking the blocks and jobs still in it; later posts are refused. Idempotent. Loop thread only.
    func closeInbox() {
        var taken = Inbox.Contents(blocks: BlockQueue(), changes: [])
        inbox.close(into: &taken)
        absorb(&taken)
    }
}
