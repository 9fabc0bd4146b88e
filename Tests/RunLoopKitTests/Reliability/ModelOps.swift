import RunLoopKit

/// The modes the model test uses: default and A are common modes, B is not; `common` is the pseudo-mode.
enum ModelMode: Hashable, Sendable, CustomStringConvertible {
    case `default`, a, b, common

    static let concrete: [ModelMode] = [.default, .a, .b]
    static let commonSet: [ModelMode] = [.default, .a]

    var loopMode: Loop.Mode {
        switch self {
        case .default: .default
        case .a: "A"
        case .b: "B"
        case .common: .common
        }
    }

    var description: String { loopMode.name }
}

/// When a model timer is due: in the past (an offset in nanoseconds from a base far behind now), or an hour away.
enum ModelDue: Hashable, Sendable {
    case past(Int64)
    case far
}

/// A reference to one of the model's items.
enum ModelItem: Hashable, Sendable {
    case source(Int)
    case timer(Int)
    case observer(Int)
    case descriptor(Int)
}

/// A block: its id (recorded when it runs), its modes, and what it does after recording.
struct ModelBlock: Sendable {
    let id: Int
    let modes: [ModelMode]
    let actions: [ModelOp]
}

/// One step of a random sequence; executed the same way by the model and by the real loop.
indirect enum ModelOp: Sendable, CustomStringConvertible {
    case createSource(id: Int, order: Int)
    case createTimer(id: Int, due: ModelDue)
    case createObserver(id: Int, activities: Loop.Activity, repeats: Bool, order: Int)
    case add(ModelItem, ModelMode)
    case remove(ModelItem, ModelMode)
    case invalidate(ModelItem)
    case signal(Int)
    case setFireTime(Int, ModelDue)
    case perform(ModelBlock)
    /// Runs the mode for zero seconds (one polling pass) or for 10 s (which the model only allows when it
    /// predicts the run ends without sleeping).
    case run(ModelMode, poll: Bool, returnAfterSourceHandled: Bool)
    case stop
    case wakeUp
    case sequence([ModelOp])
    /// A descriptor source on the test's descriptor `slot`, whose handler records its call and then runs `actions`.
    case createDescriptorSource(
        id: Int, slot: Int, events: FileDescriptorSource.Events, order: Int, actions: [ModelOp])
    case setEvents(Int, FileDescriptorSource.Events)
    /// Makes descriptor `slot` readable (its peer writes a byte) or not (it is read dry).
    case makeReadable(slot: Int)
    case drain(slot: Int)
    /// Replaces the file descriptor `slot` names with a new one (`dup2`), behind its sources' backs: the kernel drops
    /// the old file's epoll registration and the number names a file the loop never saw.
    case replaceDescriptor(slot: Int)
    /// Closes the writer of the pipe slot (``LoopModel/pipeSlot``): its read end reports a hang-up until replaced.
    case hangUp(slot: Int)

    /// Whether the step runs the loop (itself, or one of the steps of a sequence).
    var runsTheLoop: Bool {
        switch self {
        case .run: true
        case .sequence(let ops): ops.contains { $0.runsTheLoop }
        default: false
        }
    }

    var description: String {
        switch self {
        case .createSource(let id, let order): "createSource(\(id), order: \(order))"
        case .createTimer(let id, let due): "createTimer(\(id), \(due))"
        case .createObserver(let id, let activities, let repeats, let order):
            "createObserver(\(id), \(activities), repeats: \(repeats), order: \(order))"
        case .add(let item, let mode): "add(\(item), \(mode))"
        case .remove(let item, let mode): "remove(\(item), \(mode))"
        case .invalidate(let item): "invalidate(\(item))"
        case .signal(let id): "signal(\(id))"
        case .setFireTime(let id, let due): "setFireTime(\(id), \(due))"
        case .perform(let block): "perform(K\(block.id) in \(block.modes): \(block.actions))"
        case .run(let mode, let poll, let once): "run(\(mode), \(poll ? "poll" : "10s"), rash: \(once))"
        case .stop: "stop"
        case .wakeUp: "wakeUp"
        case .sequence(let ops): "sequence(\(ops))"
        case .createDescriptorSource(let id, let slot, let events, let order, let actions):
            "createDescriptorSource(\(id), slot: \(slot), \(events), order: \(order), actions: \(actions))"
        case .setEvents(let id, let events): "setEvents(\(id), \(events))"
        case .makeReadable(let slot): "makeReadable(\(slot))"
        case .drain(let slot): "drain(\(slot))"
        case .replaceDescriptor(let slot): "replaceDescriptor(\(slot))"
        case .hangUp(let slot): "hangUp(\(slot))"
        }
    }
}

/// The single activities, in pass order, and their recorded names.
let modelActivities: [Loop.Activity] = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

/// Sorts every maximal run of schedule/cancel records: a common-mode add or remove visits the common modes in
/// `Set` order, which Swift randomises per process, so only their multiset is specified. Sorts likewise every
/// maximal run of descriptor-handler records of one `order` (`D<order>/<id>:<events>`): among ready sources of equal
/// order, the loop calls them in the order epoll reported their descriptors (unspecified) and, within one
/// descriptor, in no documented order; lower orders first is the rule, and it stays checked. Last calls
/// (`D<order>/<id>:invalid`) form one group whatever their order: the loop makes them in the order the sources
/// failed, which follows epoll's report order when several parked registrations fail as their mode resumes.
func normalizedTrace(_ trace: [String]) -> [String] {
    var result: [String] = []
    var group: [String] = []
    var groupKey: Substring?
    for entry in trace {
        let key: Substring? =
            entry.hasPrefix("sched") || entry.hasPrefix("cancel") ? "sched" : descriptorOrderKey(entry)
        if key == nil || key != groupKey {
            result.append(contentsOf: group.sorted())
            group.removeAll()
        }
        groupKey = key
        if key == nil { result.append(entry) } else { group.append(entry) }
    }
    result.append(contentsOf: group.sorted())
    return result
}

/// `D<order>` for a descriptor-handler record `D<order>/<id>:<events>`, else nil.
func descriptorOrderKey(_ entry: String) -> Substring? {
    guard entry.hasPrefix("D"), let slash = entry.firstIndex(of: "/") else { return nil }
    let order = entry[entry.index(after: entry.startIndex)..<slash]
    guard !order.isEmpty && order.allSatisfy(\.isNumber) else { return nil }
    return entry.hasSuffix(":invalid") ? "D:invalid" : entry[..<slash]
}
