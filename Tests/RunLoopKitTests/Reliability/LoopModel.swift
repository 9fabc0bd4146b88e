import RunLoopKit

/// A reference model of one loop driven only from its own thread: the semantics of Docs/Iteration.md written as
/// plainly as possible (arrays and flags, no performance tricks), to predict the exact callouts of a real loop.
///
/// A value type, so a step can be tried on a copy: the generator drops steps after which the real loop would
/// sleep (``aborted``), keeping the test free of real time.
struct LoopModel {
    enum TimerState { case idle, scheduled, parked, due, firing }

    /// What every item has: validity, whether it was bound to the loop, its modes (in join order), common flag.
    struct Membership {
        var valid = true
        var bound = false
        var modes: [ModelMode] = []
        var isCommon = false
    }

    struct Source {
        let order: Int
        var member = Membership()
        var signalled = false
        var queued = false
    }

    struct Timer {
        var due: ModelDue
        var member = Membership()
        var state = TimerState.idle
        var sequence: UInt64 = 0
        /// Fired on its own: invalid and out of every mode until `setFireTime` re-arms it.
        var spent = false
        /// While spent: the modes it was in when it fired (minus those it was removed from since), and whether it
        /// had been added to the common modes. A re-arm puts it back in them.
        var formerModes: [ModelMode] = []
        var formerCommon = false
    }

    struct Observer {
        let activities: Loop.Activity
        let repeats: Bool
        let order: Int
        var member = Membership()
    }

    var sources: [Int: Source] = [:]
    /// Descriptor sources, the test's descriptors and the loop's registrations: see LoopModel+Descriptors.swift.
    var descriptorSources: [Int: DescriptorSource] = [:]
    var slots = [Slot](repeating: Slot(), count: LoopModel.slotCount)
    var registrations: [Int: Registration] = [:]
    var nextRegistration = 0
    /// The registration of each slot in the poller's table (the epoll set's entries), and in the loop's own table.
    var pollerTable: [Int: Int] = [:]
    var loopTable: [Int: Int] = [:]
    /// Registrations parked, in the order they were parked.
    var parkedRegistrations: [Int] = []
    /// Sources invalidated because their descriptor failed, with the modes they were in: their last call is due.
    var failedSources: [(id: Int, modes: [ModelMode])] = []
    var timers: [Int: Timer] = [:]
    var observers: [Int: Observer] = [:]
    /// Each mode's observers, sorted by order, equal orders in the order they joined.
    var observerLists: [ModelMode: [Int]] = [:]
    var blocks: [ModelBlock] = []
    /// Sources signalled since the loop last looked, oldest first (the real loop's lock-free stack).
    var signalStack: [Int] = []
    /// Signalled sources waiting for a pass in one of their modes: by order, then by time queued.
    var signalledList: [Int] = []
    /// Timers in the heap, and timers parked because they came due while none of their modes ran.
    var heap: Set<Int> = []
    var parked: [Int] = []
    var nextSequence: UInt64 = 0
    var stopRequested = false
    var wakeRequested = false
    var current: ModelMode?
    var depth = 0
    var passBudget = 0

    /// The callouts, in order.
    var trace: [String] = []
    /// Descriptor rules the last step exercised (parking, a failure, a mask changed before a call...), for coverage.
    var notes: [String] = []
    /// Why the last step cannot be run for real without sleeping, if it cannot.
    var aborted: String?

    // MARK: Steps

    mutating func apply(_ op: ModelOp) {
        guard aborted == nil else { return }
        switch op {
        case .createSource(let id, let order): sources[id] = Source(order: order)
        case .createTimer(let id, let due): timers[id] = Timer(due: due)
        case .createObserver(let id, let activities, let repeats, let order):
            observers[id] = Observer(activities: activities, repeats: repeats, order: order)
        case .add(let item, let mode): add(item, to: mode)
        case .remove(let item, let mode): remove(item, from: mode)
        case .invalidate(let item): invalidate(item)
        case .signal(let id): signal(id)
        case .setFireTime(let id, let due): setFireTime(id, due)
        case .perform(let block): blocks.append(block)
        case .run(let mode, let poll, let once):
            if depth == 0 { passBudget = 40 }
            let result = run(mode, poll: poll, returnAfterSourceHandled: once)
            trace.append("R:\(result)")
        case .stop: stopRequested = true
        case .wakeUp: wakeRequested = true
        case .sequence(let ops): for op in ops { apply(op) }
        case .createDescriptorSource(let id, let slot, let events, let order, let actions):
            descriptorSources[id] = DescriptorSource(
                slot: slot, order: order, actions: actions, file: slots[slot].file,
                events: events.intersection([.readable, .writable, .priority]))
        case .setEvents(let id, let events): setEvents(id, events)
        case .makeReadable(let slot): if !slots[slot].hungUp { slots[slot].readable = true }  // No writer left.
        case .drain(let slot): slots[slot].readable = false
        case .replaceDescriptor(let slot):
            slots[slot].file += 1
            slots[slot].readable = false
            slots[slot].hungUp = false
        case .hangUp(let slot): slots[slot].hungUp = true
        }
    }

    // MARK: Membership

    func member(_ item: ModelItem) -> Membership {
        switch item {
        case .source(let id): sources[id]!.member
        case .timer(let id): timers[id]!.member
        case .observer(let id): observers[id]!.member
        case .descriptor(let id): descriptorSources[id]!.member
        }
    }

    mutating func update(_ item: ModelItem, _ change: (inout Membership) -> Void) {
        switch item {
        case .source(let id): change(&sources[id]!.member)
        case .timer(let id): change(&timers[id]!.member)
        case .observer(let id): change(&observers[id]!.member)
        case .descriptor(let id): change(&descriptorSources[id]!.member)
        }
    }

    mutating func add(_ item: ModelItem, to mode: ModelMode) {
        guard member(item).valid else {
            trace.append("E:invalidated")
            return
        }
        update(item) { $0.bound = true }
        if case .descriptor(let id) = item {
            guard register(id) else {
                trace.append("E:badDescriptor")
                return
            }
        }
        if mode == .common {
            guard !member(item).isCommon else { return }
            update(item) { $0.isCommon = true }
            for name in ModelMode.commonSet { addToMode(item, name) }
        } else {
            addToMode(item, mode)
        }
    }

    mutating func addToMode(_ item: ModelItem, _ mode: ModelMode) {
        let state = member(item)
        guard state.valid, !state.modes.contains(mode) else { return }
        update(item) { $0.modes.append(mode) }
        switch item {
        case .source(let id):
            trace.append("sched\(id)@\(mode)")
            if sources[id]!.signalled { queueSignalled(id) }
        case .timer(let id):
            if timers[id]!.state == .idle {
                schedule(id)
            } else if timers[id]!.state == .parked, mode == current {
                parked.removeAll { $0 == id }
                schedule(id)
            }
        case .observer(let id):
            var list = observerLists[mode, default: []]
            let order = observers[id]!.order
            let index = list.firstIndex { observers[$0]!.order > order } ?? list.endIndex
            list.insert(id, at: index)
            observerLists[mode] = list
        case .descriptor(let id):
            joinedMode(id, mode)
        }
    }

    mutating func remove(_ item: ModelItem, from mode: ModelMode) {
        guard member(item).bound else { return }
        if case .timer(let id) = item, timers[id]!.spent {
            if mode == .common {
                timers[id]!.formerCommon = false
            } else {
                timers[id]!.formerModes.removeAll { $0 == mode }
            }
        }
        if mode == .common {
            guard member(item).isCommon else { return }
            update(item) { $0.isCommon = false }
            for name in ModelMode.commonSet { removeFromMode(item, name) }
        } else {
            removeFromMode(item, mode)
        }
    }

    mutating func removeFromMode(_ item: ModelItem, _ mode: ModelMode) {
        guard let index = member(item).modes.firstIndex(of: mode) else { return }
        update(item) { $0.modes.remove(at: index) }
        switch item {
        case .source(let id):
            trace.append("cancel\(id)@\(mode)")
        case .timer(let id):
            if timers[id]!.member.modes.isEmpty { unschedule(id) }
        case .observer(let id):
            observerLists[mode]?.removeAll { $0 == id }
        case .descriptor:
            break
        }
    }

    mutating func invalidate(_ item: ModelItem) {
        if case .timer(let id) = item { timers[id]!.spent = false }  // A fired one-shot can no longer be re-armed.
        guard member(item).valid else { return }
        update(item) { $0.valid = false }
        if case .descriptor(let id) = item { releaseRegistration(id) }
        if case .source(let id) = item { sources[id]!.signalled = false }
        guard member(item).bound else { return }
        update(item) { $0.isCommon = false }
        for mode in member(item).modes { removeFromMode(item, mode) }
        if case .timer(let id) = item { unschedule(id) }
        if case .descriptor(let id) = item { unregister(id) }
    }

    // MARK: Sources

    mutating func signal(_ id: Int) {
        guard sources[id]!.member.valid, !sources[id]!.signalled else { return }
        sources[id]!.signalled = true
        if sources[id]!.member.bound { signalStack.append(id) }
    }

    mutating func queueSignalled(_ id: Int) {
        guard !sources[id]!.queued, sources[id]!.member.valid else { return }
        sources[id]!.queued = true
        let order = sources[id]!.order
        let index = signalledList.firstIndex { sources[$0]!.order > order } ?? signalledList.endIndex
        signalledList.insert(id, at: index)
    }

    /// Step 4: performs the running mode's signalled sources (only the first with `onlyOne`).
    mutating func performSignalledSources(onlyOne: Bool) -> Bool {
        let pushed = signalStack
        signalStack.removeAll()
        for id in pushed { queueSignalled(id) }
        guard let mode = current else { return false }
        var due: [Int] = []
        var kept: [Int] = []
        for id in signalledList {
            let source = sources[id]!
            if !source.member.valid || source.member.modes.isEmpty {
                sources[id]!.queued = false
            } else if source.member.modes.contains(mode) && (!onlyOne || due.isEmpty) {
                sources[id]!.queued = false
                due.append(id)
            } else {
                kept.append(id)
            }
        }
        signalledList = kept
        var performed = false
        for id in due {
            let wasSignalled = sources[id]!.signalled
            sources[id]!.signalled = false
            guard wasSignalled, sources[id]!.member.valid else { continue }
            trace.append("S\(id)")
            performed = true
        }
        return performed
    }

    // MARK: Timers

    mutating func schedule(_ id: Int) {
        timers[id]!.sequence = nextSequence
        nextSequence += 1
        heap.insert(id)
        timers[id]!.state = .scheduled
    }

    mutating func unschedule(_ id: Int) {
        switch timers[id]!.state {
        case .scheduled: heap.remove(id)
        case .parked: parked.removeAll { $0 == id }
        case .idle, .due, .firing: break
        }
        timers[id]!.state = .idle
    }

    mutating func setFireTime(_ id: Int, _ due: ModelDue) {
        if timers[id]!.spent {
            // A fired one-shot re-armed: valid again, back in its modes, scheduled for the new time.
            timers[id]!.spent = false
            timers[id]!.member.valid = true
            unschedule(id)
            timers[id]!.due = due
            if timers[id]!.formerCommon {
                timers[id]!.member.isCommon = true
                for name in ModelMode.commonSet { addToMode(.timer(id), name) }
            }
            for mode in timers[id]!.formerModes { addToMode(.timer(id), mode) }
            timers[id]!.formerModes = []
            timers[id]!.formerCommon = false
            if !timers[id]!.member.modes.isEmpty, timers[id]!.state == .idle { schedule(id) }
            return
        }
        guard timers[id]!.member.valid else { return }
        guard timers[id]!.member.bound else {
            timers[id]!.due = due
            return
        }
        unschedule(id)
        timers[id]!.due = due
        if !timers[id]!.member.modes.isEmpty { schedule(id) }
    }

    /// The heap's timers that are due (in the past), in firing order: fire time, then time scheduled.
    func dueTimersInHeap() -> [Int] {
        heap.compactMap { id -> (Int64, UInt64, Int)? in
            guard case .past(let offset) = timers[id]!.due else { return nil }
            return (offset, timers[id]!.sequence, id)
        }
        .sorted { ($0.0, $0.1) < ($1.0, $1.1) }
        .map(\.2)
    }

    /// Step 9a.
    mutating func fireDueTimers() {
        guard let mode = current else { return }
        var due: [Int] = []
        for id in dueTimersInHeap() {
            heap.remove(id)
            if timers[id]!.member.modes.contains(mode) {
                timers[id]!.state = .due
                due.append(id)
            } else {
                timers[id]!.state = .parked
                parked.append(id)
            }
        }
        for id in due {
            guard timers[id]!.state == .due else { continue }
            guard timers[id]!.member.valid else {
                timers[id]!.state = .idle
                continue
            }
            timers[id]!.state = .firing
            trace.append("T\(id)")
            guard timers[id]!.state == .firing else { continue }
            timers[id]!.state = .idle
            // Every model timer is one-shot: it is spent, remembering its modes for a re-arm.
            timers[id]!.formerModes = timers[id]!.member.modes
            timers[id]!.formerCommon = timers[id]!.member.isCommon
            invalidate(.timer(id))
            timers[id]!.spent = true
        }
    }

    /// Puts back in play the parked timers of `mode`, in the order they were parked.
    mutating func enter(_ mode: ModelMode) {
        for id in parked where timers[id]!.member.modes.contains(mode) {
            parked.removeAll { $0 == id }
            schedule(id)
        }
        resumeParkedRegistrations(mode)
    }

    // MARK: Running

    func matches(_ block: ModelBlock, _ mode: ModelMode) -> Bool {
        block.modes.contains { $0 == mode || ($0 == .common && ModelMode.commonSet.contains(mode)) }
    }

    func isEmpty(_ mode: ModelMode) -> Bool {
        !sources.values.contains { $0.member.modes.contains(mode) }
            && !timers.values.contains { $0.member.modes.contains(mode) }
            && !descriptorSources.values.contains { $0.member.modes.contains(mode) }
            && !blocks.contains { matches($0, mode) } && !hasFailedSource(mode)
    }

    mutating func notifyObservers(_ activity: Loop.Activity) {
        guard let mode = current else { return }
        for id in observerLists[mode, default: []] where observers[id]!.activities.contains(activity) {
            guard observers[id]!.member.valid else { continue }
            trace.append("O\(id).\(activity)")
            if !observers[id]!.repeats { invalidate(.observer(id)) }
        }
    }

    /// Steps 3 and 5: the blocks queued so far whose modes match run in order; the rest keep their place.
    mutating func runBlocks() {
        guard let mode = current, !blocks.isEmpty else { return }
        let batch = blocks
        blocks = []
        var waiting: [ModelBlock] = []
        for block in batch {
            guard aborted == nil else { return }
            if matches(block, mode) {
                trace.append("K\(block.id)")
                for action in block.actions { apply(action) }
            } else {
                waiting.append(block)
            }
        }
        if !waiting.isEmpty { blocks = waiting + blocks }
    }

    func hasLocalWork(_ mode: ModelMode) -> Bool {
        blocks.contains { matches($0, mode) }
            || signalledList.contains { sources[$0]!.member.modes.contains(mode) } || hasFailedSource(mode)
    }

    /// Steps 6-8: with `poll` nothing is announced; otherwise the loop must find a reason not to sleep, or a
    /// descriptor must report. Answers what the epoll set reports for the descriptor sources' registrations.
    mutating func waitForEvents(
        poll: Bool, mode: ModelMode
    ) -> [(registration: Int, events: FileDescriptorSource.Events)] {
        let reports = readDescriptorReports()
        guard !poll else { return reports }
        notifyObservers(.beforeWaiting)
        var block = true
        if !signalStack.isEmpty || stopRequested {
            block = false
        } else if wakeRequested {
            wakeRequested = false
            block = false
        } else if hasLocalWork(mode) || !dueTimersInHeap().isEmpty {
            block = false
        }
        if block && reports.isEmpty { aborted = "the real loop would sleep" }
        notifyObservers(.afterWaiting)
        return reports
    }

    mutating func run(_ mode: ModelMode, poll: Bool, returnAfterSourceHandled once: Bool) -> Loop.RunResult {
        guard mode != .common, !isEmpty(mode) else { return .finished }
        guard depth < 4 else {
            aborted = "nested too deep"
            return .finished
        }
        let outer = current
        if depth == 0 {
            stopRequested = false
            wakeRequested = false
        }
        depth += 1
        current = mode
        enter(mode)
        notifyObservers(.entry)
        let result = runPasses(mode, poll: poll, once: once)
        notifyObservers(.exit)
        stopRequested = false
        depth -= 1
        current = outer
        if let outer { enter(outer) }
        return result
    }

    mutating func runPasses(_ mode: ModelMode, poll: Bool, once: Bool) -> Loop.RunResult {
        while true {
            passBudget -= 1
            if passBudget < 0 { aborted = "too many passes" }
            if aborted != nil { return .finished }
            notifyObservers(.beforeTimers)
            notifyObservers(.beforeSources)
            runBlocks()
            var handled = performSignalledSources(onlyOne: once)
            if handled { runBlocks() }
            let reports = waitForEvents(poll: handled || poll || isEmpty(mode), mode: mode)
            fireDueTimers()
            if handleReadyDescriptors(reports) { handled = true }
            runBlocks()
            if aborted != nil { return .finished }
            if handled && once { return .handledSource }
            if poll { return .timedOut }
            if stopRequested {
                stopRequested = false
                return .stopped
            }
            if isEmpty(mode) { return .finished }
        }
    }
}
