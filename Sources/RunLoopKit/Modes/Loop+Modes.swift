/// Modes: made on first use by name, and the common modes (CF's common-modes set).
extension Loop {
    /// Adds `mode` to the loop's common modes, copying every item added to ``Mode/common`` into it.
    /// Safe from any thread. Adding a mode that is common already changes nothing, and there is no way to remove a
    /// common mode (both as in CF).
    public func addCommonMode(_ mode: Mode) {
        guard mode != .common else { return }
        onLoopThread { [self] in
            guard modeTable.commonNames.insert(mode).inserted else { return }
            let state = self.mode(named: mode)
            state.isCommon = true
            publishedModes.withLock { _ = $0.common.insert(mode) }
            for item in modeTable.commonItems.values { addToMode(item, state) }
        }
    }

    /// The loop's common modes (initially just ``Mode/default``). Safe from any thread: a consistent snapshot (a
    /// mode added from another thread shows once the loop applied the change, at its next pass).
    public var commonModes: Set<Mode> {
        publishedModes.withLock { $0.common }
    }

    /// Every mode the loop has, in the order they came into being: a mode exists once an item, a block, a run or
    /// ``addCommonMode(_:)`` named it. Safe from any thread: a consistent snapshot (a mode named by an item or
    /// ``addCommonMode(_:)`` from another thread shows once the loop applied the change; one named by a block at
    /// once).
    public var allModes: [Mode] {
        publishedModes.withLock { $0.all }
    }

    /// The state of the mode named `name`, created on first use. Loop thread only.
    @inline(__always)
    func mode(named name: Mode) -> ModeState {
        if name == .default { return defaultMode }  // Equal names compare as one word.
        if let state = existingMode(named: name) { return state }
        return makeMode(named: name)
    }

    /// Creates the mode named `name` (rare: kept out of line, so the lookup above stays small enough to inline).
    @inline(never)
    private func makeMode(named name: Mode) -> ModeState {
        let state = modeTable.make(named: name)
        publishedModes.withLock { $0.created(name, id: state.id, counts: state.counts) }
        return state
    }

    /// The state of the mode named `name` if it exists. Loop thread only.
    ///
    /// Loops usually have a handful of modes, and comparing a few short names costs less than hashing one, so the
    /// dictionary is only used past eight modes. (Written here rather than as a method of ``ModeTable``: a
    /// non-mutating method of a part would be called on a copy of the whole part, retaining each of its fields.)
    func existingMode(named name: Mode) -> ModeState? {
        guard modeTable.list.count > 8 else { return modeTable.list.first { $0.name == name } }
        return modeTable.byName[name]
    }
}
