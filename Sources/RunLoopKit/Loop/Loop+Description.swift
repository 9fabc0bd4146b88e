extension Loop: CustomStringConvertible {
    /// A readable account of the loop for debugging: its thread, state, and each mode with its items.
    ///
    /// On the loop's own thread it lists every mode and item (sources with order and signalled state, timers with next
    /// fire time, interval and tolerance, observers with activities, descriptor sources with descriptor and events;
    /// items paused by their rate limit are marked), and how many one-shot callbacks are scheduled (the loop's own
    /// that end rate-limit pauses included). From another thread, where the items cannot be read safely, it
    /// gives the summary line only; ``itemCounts(in:)`` tells how many items each mode holds, from any thread.
    public var description: String {
        var text = "Loop(thread \(identity.threadID)\(isMain ? ", main" : "")"
        if isTerminated { return text + ", terminated)" }
        text += ", \(isWaiting ? "waiting" : "awake")"
        if let mode = currentMode { text += ", running \(mode)" }
        text += ")"
        guard isCurrent else { return text }
        applyChanges()
        text += "\n  common modes: \(modeTable.commonNames.map(\.name).sorted().joined(separator: ", "))"
        for state in modeTable.list {
            text += "\n  mode \(state.name)\(state === runStack.mode ? " (current)" : ""):"
            if state.sources.isEmpty && state.descriptorSources.isEmpty && state.timers.isEmpty
                && state.observers.isEmpty
            {
                text += " empty"
            }
            for source in state.sources.sorted(by: { $0.order < $1.order }) {
                text += "\n    source order \(source.order)\(source.isSignalled ? ", signalled" : "")"
                if source.isRateLimited { text += ", rate-limited" }
            }
            for source in state.descriptorSources.sorted(by: { $0.watchedDescriptor < $1.watchedDescriptor }) {
                text += "\n    descriptor \(source.watchedDescriptor) \(source.watchedEvents) order \(source.order)"
                if source.isParked { text += ", parked" }
                if source.isRateLimited { text += ", rate-limited" }
            }
            for timer in state.timers.sorted(by: { $0.fireTime < $1.fireTime }) {
                text += "\n    timer next \(timer.nextFireTime)"
                if let interval = timer.interval { text += ", every \(interval)" }
                if timer.tolerance > .zero { text += ", tolerance \(timer.tolerance)" }
                if timer.isRateLimited { text += ", rate-limited" }
            }
            for observer in state.observers {
                text += "\n    observer \(observer.activities) order \(observer.order)"
                if !observer.repeats { text += ", once" }
            }
        }
        if timerTable.callbacks.count > 0 {
            let next = timerTable.firstCallbackFireTime.map { " (next at \(Instant(nanoseconds: $0)))" } ?? ""
            text += "\n  one-shot callbacks scheduled: \(timerTable.callbacks.count)\(next)"
        }
        let waiting = blocks.count
        if waiting > 0 { text += "\n  blocks waiting: \(waiting)" }
        return text
    }
}
