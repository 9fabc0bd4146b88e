import RunLoopKit

/// Descriptor sources in the reference model: the rules of FileDescriptorSource and Docs/Iteration.md (step 9) as
/// plain state. One registration per descriptor number and file, shared by the loop's sources of it, told the union of
/// what its valid sources watch, or, while parked, what those in the running mode watched; reports masked to what a
/// source watches when it is called; a source whose registration left the epoll set behind its back (its file
/// replaced) fails: invalidated, with one last call (`invalid`) in a pass of one of the modes it was in.
///
/// The test's descriptors are the watched ends of two socket pairs (readable while the test's peer wrote and nobody
/// drained them, always writable, never hung up) and the read end of a pipe (``pipeSlot``: never writable, hung up
/// once the test closed its writer).
extension LoopModel {
    typealias Events = FileDescriptorSource.Events

    static let slotCount = 3
    /// The slot that is a pipe's read end; the others are socket ends.
    static let pipeSlot = 2
    static let watchable: Events = [.readable, .writable, .priority]

    /// One of the test's descriptor numbers: the file it names now (a count of replacements), and its readiness.
    struct Slot {
        var file = 0
        var readable = false
        /// The pipe's writer was closed.
        var hungUp = false
    }

    struct DescriptorSource {
        let slot: Int
        let order: Int
        let actions: [ModelOp]
        /// The file its slot named when it was made.
        let file: Int
        var events: Events
        var member = Membership()
        /// The registration it holds in the poller's table (from its add until released), and the one whose source
        /// list it is in (from its first join until it leaves).
        var held: Int?
        var joined: Int?
        /// Invalidated by the loop because its registration left the set (``FileDescriptorSource/failure``).
        var failed = false
    }

    /// A `DescriptorWatch`.
    struct Registration {
        let slot: Int
        let file: Int
        /// Sources holding it; it leaves the set when the last lets go.
        var holders = 0
        /// Its source list as the loop keeps it: `first`, then `others` (a removed first is replaced by the last).
        var first: Int?
        var others: [Int] = []
        /// What the epoll set was last told.
        var registered: Events
        var parked = false
        /// While it watches nothing (`[]`, a one-shot entry with no events): whether the kernel may still report a
        /// hang-up once. Every change of what it watches re-arms it.
        var armed = true
        /// Left the poller's table: released, superseded or refused.
        var removed = false

        var sources: [Int] { (first.map { [$0] } ?? []) + others }

        mutating func insert(_ id: Int) {
            if first == nil { first = id } else { others.append(id) }
        }

        mutating func remove(_ id: Int) {
            if first == id {
                first = others.popLast()
            } else if let index = others.firstIndex(of: id) {
                others.remove(at: index)
            }
        }
    }

    // MARK: Registering

    /// The first add's registration, from the calling thread: joins the registration of the same file, or makes one
    /// (superseding the entry of a replaced file). False: the descriptor no longer names the source's file.
    mutating func register(_ id: Int) -> Bool {
        if descriptorSources[id]!.held != nil { return true }
        let source = descriptorSources[id]!
        guard source.file == slots[source.slot].file else { return false }
        if let shared = pollerTable[source.slot], registrations[shared]!.file == source.file {
            registrations[shared]!.holders += 1
            descriptorSources[id]!.held = shared
            return true
        }
        if let previous = pollerTable[source.slot] { registrations[previous]!.removed = true }
        let reg = nextRegistration
        nextRegistration += 1
        registrations[reg] = Registration(slot: source.slot, file: source.file, holders: 1, registered: source.events)
        pollerTable[source.slot] = reg
        descriptorSources[id]!.held = reg
        return true
    }

    /// The source just entered `mode`: its first join enters it in its registration; a parked registration of the
    /// running mode is restored.
    mutating func joinedMode(_ id: Int, _ mode: ModelMode) {
        if descriptorSources[id]!.joined == nil { enterRegistration(id) }
        if let reg = descriptorSources[id]!.joined, registrations[reg]!.parked, mode == current {
            parkedRegistrations.removeAll { $0 == reg }
            unpark(reg)
        }
    }

    mutating func enterRegistration(_ id: Int) {
        guard let reg = descriptorSources[id]!.held else { return }
        if registrations[reg]!.removed {
            notes.append("failed joining")
            reportFailure(id)
            return
        }
        let slot = registrations[reg]!.slot
        let previous = loopTable.updateValue(reg, forKey: slot)
        registrations[reg]!.insert(id)
        descriptorSources[id]!.joined = reg
        if let previous, previous != reg {
            notes.append("superseded")
            registrationLeftTheSet(previous)
        }
        refresh(reg)
    }

    /// Lets go of the source's registration (invalidation); the last holder takes it out of the set.
    mutating func releaseRegistration(_ id: Int) {
        guard let reg = descriptorSources[id]!.held else { return }
        descriptorSources[id]!.held = nil
        registrations[reg]!.holders -= 1
        guard registrations[reg]!.holders == 0, !registrations[reg]!.removed else { return }
        registrations[reg]!.removed = true
        pollerTable[registrations[reg]!.slot] = nil
    }

    /// Takes an invalidated source out of its registration's list.
    mutating func unregister(_ id: Int) {
        releaseRegistration(id)
        guard let reg = descriptorSources[id]!.joined else { return }
        descriptorSources[id]!.joined = nil
        registrations[reg]!.remove(id)
        guard isRegistered(reg) else { return }
        if registrations[reg]!.sources.isEmpty {
            loopTable[registrations[reg]!.slot] = nil
            registrations[reg]!.parked = false
            parkedRegistrations.removeAll { $0 == reg }
        } else {
            refresh(reg)
        }
    }

    func isRegistered(_ reg: Int) -> Bool { loopTable[registrations[reg]!.slot] == reg }

    // MARK: What the epoll set is told

    mutating func setEvents(_ id: Int, _ events: Events) {
        let watched = events.intersection(Self.watchable)
        guard descriptorSources[id]!.events != watched else { return }
        descriptorSources[id]!.events = watched
        guard descriptorSources[id]!.member.valid, let reg = descriptorSources[id]!.joined else { return }
        refresh(reg)
    }

    func wanted(_ reg: Int) -> Events {
        var union: Events = []
        for id in registrations[reg]!.sources where descriptorSources[id]!.member.valid {
            union.formUnion(descriptorSources[id]!.events)
        }
        return union
    }

    func claimed(_ reg: Int, in mode: ModelMode?) -> Events {
        guard let mode else { return [] }
        var union: Events = []
        for id in registrations[reg]!.sources {
            let source = descriptorSources[id]!
            if source.member.valid && source.member.modes.contains(mode) { union.formUnion(source.events) }
        }
        return union
    }

    mutating func refresh(_ reg: Int) {
        guard isRegistered(reg) else { return }
        var target = wanted(reg)
        if registrations[reg]!.parked {
            let claimed = claimed(reg, in: current)
            if claimed == target {
                registrations[reg]!.parked = false
                parkedRegistrations.removeAll { $0 == reg }
            } else {
                target = claimed
            }
        }
        setRegisteredEvents(reg, target)
    }

    /// `EPOLL_CTL_MOD`, unless the set was told `events` last; refused when the file was replaced (the kernel
    /// dropped the entry and the number names a file not in the set), which fails the registration's sources.
    mutating func setRegisteredEvents(_ reg: Int, _ events: Events) {
        guard events != registrations[reg]!.registered else { return }
        if !registrations[reg]!.removed {
            let slot = registrations[reg]!.slot
            guard registrations[reg]!.file != slots[slot].file else {
                registrations[reg]!.registered = events
                registrations[reg]!.armed = true
                return
            }
            registrations[reg]!.removed = true
            pollerTable[slot] = nil
        }
        notes.append("change refused")
        registrationLeftTheSet(reg)
    }

    mutating func registrationLeftTheSet(_ reg: Int) {
        if isRegistered(reg) { loopTable[registrations[reg]!.slot] = nil }
        if registrations[reg]!.parked {
            registrations[reg]!.parked = false
            parkedRegistrations.removeAll { $0 == reg }
        }
        let members = registrations[reg]!.sources
        registrations[reg]!.first = nil
        registrations[reg]!.others = []
        for id in members {
            descriptorSources[id]!.joined = nil
            reportFailure(id)
        }
    }

    mutating func reportFailure(_ id: Int) {
        guard descriptorSources[id]!.member.valid, !descriptorSources[id]!.failed else { return }
        descriptorSources[id]!.failed = true
        let modes = descriptorSources[id]!.member.modes
        invalidate(.descriptor(id))
        if !modes.isEmpty { failedSources.append((id, modes)) }
    }

    func hasFailedSource(_ mode: ModelMode) -> Bool {
        failedSources.contains { $0.modes.contains(mode) }
    }

    // MARK: Parking

    mutating func park(_ reg: Int, claimed: Events) {
        guard claimed != registrations[reg]!.registered else { return }
        notes.append("parked")
        if !registrations[reg]!.parked {
            registrations[reg]!.parked = true
            parkedRegistrations.append(reg)
        }
        setRegisteredEvents(reg, claimed)
    }

    mutating func unpark(_ reg: Int) {
        notes.append("unparked")
        registrations[reg]!.parked = false
        setRegisteredEvents(reg, wanted(reg))
    }

    mutating func resumeParkedRegistrations(_ mode: ModelMode) {
        var index = 0
        while index < parkedRegistrations.count {
            let reg = parkedRegistrations[index]
            if registrations[reg]!.sources.contains(where: { descriptorSources[$0]!.member.modes.contains(mode) }) {
                parkedRegistrations.remove(at: index)
                unpark(reg)
            } else {
                index += 1
            }
        }
    }

    // MARK: Handling

    /// What `epoll_wait` reports: every entry still in the kernel's set (its file not replaced) whose registered
    /// events hold, and a hung-up pipe's hang-up, which epoll reports whatever was asked; an entry that watches
    /// nothing is one-shot, so it reports that hang-up once and is then disarmed until changed. A socket end is always
    /// writable, the pipe never.
    mutating func readDescriptorReports() -> [(registration: Int, events: Events)] {
        var reports: [(Int, Events)] = []
        for (slot, reg) in pollerTable.sorted(by: { $0.key < $1.key })
        where registrations[reg]!.file == slots[slot].file {
            let registered = registrations[reg]!.registered
            var events: Events = []
            if registered.isEmpty {
                guard slots[slot].hungUp, registrations[reg]!.armed else { continue }
                registrations[reg]!.armed = false
                notes.append("hang-up to a registration watching nothing")
                reports.append((reg, [.hangUp]))
                continue
            }
            if registered.contains(.readable) && slots[slot].readable { events.insert(.readable) }
            if registered.contains(.writable) && slot != Self.pipeSlot { events.insert(.writable) }
            if slots[slot].hungUp { events.insert(.hangUp) }
            if !events.isEmpty { reports.append((reg, events)) }
        }
        return reports
    }

    /// Step 9b: the failed sources' last calls, then every ready source of the running mode, lower order first,
    /// told what it watches at the moment of its call; answers whether a handler was called.
    mutating func handleReadyDescriptors(_ reports: [(registration: Int, events: Events)]) -> Bool {
        guard let mode = current else { return false }
        var handled = false
        var index = 0
        while index < failedSources.count, aborted == nil {
            guard failedSources[index].modes.contains(mode) else {
                index += 1
                continue
            }
            let id = failedSources.remove(at: index).id
            call(id, .invalid)
            handled = true
        }
        var ready: [(id: Int, events: Events)] = []
        var maskAtQueue: [Int: Events] = [:]
        for (reg, events) in reports where isRegistered(reg) {
            var claimed: Events = []
            for id in registrations[reg]!.sources {
                let source = descriptorSources[id]!
                guard source.member.valid, source.member.modes.contains(mode) else { continue }
                claimed.formUnion(source.events)
                if registrations[reg]!.sources.count > 1 { notes.append("shared report") }
                let position = ready.firstIndex { descriptorSources[$0.id]!.order > source.order } ?? ready.endIndex
                ready.insert((id, events), at: position)
                maskAtQueue[id] = source.events
            }
            if claimed.isEmpty || !claimed.isSuperset(of: events.intersection(Self.watchable)) {
                park(reg, claimed: claimed)
            }
        }
        // Among equal orders the call order is unspecified: it must not matter for what the calls do.
        for (index, entry) in ready.enumerated() where !descriptorSources[entry.id]!.actions.isEmpty {
            let order = descriptorSources[entry.id]!.order
            if ready.indices.contains(where: { $0 != index && descriptorSources[ready[$0].id]!.order == order }) {
                aborted = "descriptor handlers of equal order, one with actions: their order is unspecified"
                return handled
            }
        }
        for (id, events) in ready {
            guard aborted == nil else { break }
            let source = descriptorSources[id]!
            guard source.member.valid, source.member.modes.contains(mode) else {
                notes.append("left before its call")
                continue
            }
            if source.events != maskAtQueue[id] { notes.append("mask changed before its call") }
            if events.contains(.hangUp) {
                notes.append(source.events.isEmpty ? "hang-up not told (watches nothing)" : "hang-up told")
            }
            let reported =
                source.events.isDisjoint(with: Self.watchable)
                ? [] : events.intersection(source.events.union([.error, .hangUp]))
            guard !reported.isEmpty else { continue }
            call(id, reported)
            handled = true
        }
        return handled
    }

    /// Records the call and runs the handler's actions, except on the last call (`invalid`): sources fail in the
    /// order epoll reported their parked registrations, so the order of last calls is unspecified and must not matter.
    mutating func call(_ id: Int, _ events: Events) {
        let source = descriptorSources[id]!
        trace.append("D\(source.order)/\(id):\(events)")
        guard events != .invalid else { return }
        for action in source.actions {
            guard aborted == nil else { return }
            apply(action)
        }
    }
}
