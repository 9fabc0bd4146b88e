/// Handlers isolated to an actor: the check, made once when an item is added (or a callback scheduled), that the
/// loop's thread is where that actor's code runs.
extension Loop {
    /// Throws unless code isolated to `isolation` may run in this loop's callouts: `MainActor.shared` on ``main``
    /// while it serves the main queue, any other actor when its executor is this loop or a ``LoopExecutor`` of it.
    /// Any thread.
    func requireIsolation(to isolation: AnyObject) throws(LoopError) {
        if isolation === MainActor.shared {
            guard isMain && servesMainQueue else {
                throw LoopError(
                    .isolationMismatch,
                    message: "an item with a @MainActor handler was offered to \(loopDescriptionForTraps): such "
                        + "items run on Loop.main only (while it serves the main queue)")
            }
            return
        }
        guard let actor = isolation as? any Actor, Self.isExecutor(of: actor, self) else {
            throw LoopError(
                .isolationMismatch,
                message: "an item whose handler is isolated to an actor was offered to \(loopDescriptionForTraps), "
                    + "which is not that actor's executor: add it to the loop the actor runs on")
        }
    }

    /// Whether `loop`, or a ``LoopExecutor`` of it, is the executor of `actor`.
    private static func isExecutor(of actor: any Actor, _ loop: Loop) -> Bool {
        let executor = actor.unownedExecutor.asSerialExecutor()
        if let executorLoop = executor as? Loop { return executorLoop === loop }
        if let loopExecutor = executor as? LoopExecutor { return loopExecutor.loop === loop }
        return false
    }
}
