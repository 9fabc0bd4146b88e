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
        }
    }
}

/// The single activities, in pass order, and their recorded names.
let modelActivities: [Loop.Activity] = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

/// Sorts every maximal run of schedule/cancel records: a common-mode add or remove visits the common modes in
/// `Set` order, which Swift randomises per process, so only their multiset is specified.
func normalizedTrace(_ trace: [String]) -> [String] {
    var result: [String] = []
    var group: [String] = []
    for entry in trace {
        if entry.hasPrefix("sched") || entry.hasPrefix("cancel") {
            group.append(entry)
        } else {
            result.append(contentsOf: group.sorted())
            group.removeAll()
            result.append(entry)
        }
    }
    result.append(contentsOf: group.sorted())
    return result
}
