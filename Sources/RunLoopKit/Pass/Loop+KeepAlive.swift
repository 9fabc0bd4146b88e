/// What keeps a run going. CF's rule, and the default: a run of a mode returns ``Loop/RunResult/finished`` as soon
/// as the mode has no source, descriptor source or timer and no block queued for it (observers never count; the
/// main loop's common modes never finish while it serves Dispatch's main queue). Two settings refine it, as
/// libuv's `uv_ref`/`uv_unref` and a run-until-stopped loop do:
///
/// - an item whose `keepsRunAlive` is `false` still fires, but does not keep its modes' runs going (a periodic
///   statistics timer that should not keep a program running);
/// - a loop whose ``Loop/keepsRunningWhenEmpty`` is `true` keeps running, asleep, with nothing in its mode, until it
///   is stopped (a worker thread with nothing registered yet).
extension Loop {
    /// Whether runs of this loop keep going, asleep, when their mode has nothing that keeps them alive, until
    /// ``stop()`` (or the run's time limit). Safe from any thread; default `false` (CF's rule: such a run returns
    /// ``RunResult/finished``).
    ///
    /// A mode must exist to be run: ``Mode/default`` always does; another mode exists once something named it.
    public var keepsRunningWhenEmpty: Bool {
        get { control.keepsRunningWhenEmpty.load(ordering: .relaxed) }
        set {
            control.keepsRunningWhenEmpty.store(newValue, ordering: .relaxed)
            wakeUp()  // A sleeping run re-checks whether it is empty now.
        }
    }

    /// Whether nothing keeps a run in `state` going: no item whose `keepsRunAlive` is true, no main queue served
    /// there that keeps runs alive (``mainQueueKeepsRunAlive``), and the loop does not run while empty. Loop
    /// thread only.
    func nothingKeepsAlive(_ state: ModeState) -> Bool {
        state.keepAliveCount == 0 && (timerTable.commonCallbackCount == 0 || !state.isCommon)
            && !(servesMainQueue(in: state) && control.mainQueueKeepsRunAlive.load(ordering: .relaxed))
            && !control.keepsRunningWhenEmpty.load(ordering: .relaxed)
    }

    /// Brings the modes' keep-alive counts in line with `item`'s `keepsRunAlive` as last set. Loop thread only.
    func applyKeepsRunAlive(_ item: AnyItem) {
        if case .observer = item { return }
        let base = item.base
        let wanted = base.keepsRunAliveRequested.load(ordering: .acquiring)
        guard base.countsTowardKeepAlive != wanted else { return }
        base.countsTowardKeepAlive = wanted
        base.memberships.forEach { modeTable.list[$0.modeID].adjustKeepAliveCount(by: wanted ? 1 : -1) }
    }
}
