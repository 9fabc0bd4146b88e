import RunLoopKit
import SplitMix64

/// Draws random ``ModelOp`` steps from a seeded PRNG, keeping small pools of live item ids.
struct ModelGenerator {
    var random: SplitMix64
    private(set) var sourceIDs: [Int] = []
    private(set) var timerIDs: [Int] = []
    private(set) var observerIDs: [Int] = []
    private var nextID = 0
    static let poolSize = 6

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    private mutating func newID() -> Int {
        nextID += 1
        return nextID
    }

    /// Records a created item in its pool, replacing an invalid one when the pool is full.
    mutating func accept(_ op: ModelOp, model: LoopModel) {
        switch op {
        case .createSource(let id, _): Self.insert(id, into: &sourceIDs) { !model.sources[$0]!.member.valid }
        case .createTimer(let id, _): Self.insert(id, into: &timerIDs) { !model.timers[$0]!.member.valid }
        case .createObserver(let id, _, _, _):
            Self.insert(id, into: &observerIDs) { !model.observers[$0]!.member.valid }
        default: break
        }
    }

    private static func insert(_ id: Int, into pool: inout [Int], isDead: (Int) -> Bool) {
        if pool.count >= poolSize, let index = pool.firstIndex(where: isDead) { pool.remove(at: index) }
        pool.append(id)
    }

    private func poolHasRoom(_ pool: [Int], isDead: (Int) -> Bool) -> Bool {
        pool.count < Self.poolSize || pool.contains(where: isDead)
    }

    private mutating func due() -> ModelDue {
        random.chance(70) ? .past(Int64(random.below(1000))) : .far
    }

    private mutating func mode(common: Bool = true) -> ModelMode {
        let modes: [ModelMode] = common ? [.default, .a, .b, .common] : [.default, .a, .b]
        return random.pick(modes)
    }

    private mutating func item() -> ModelItem? {
        var kinds: [ModelItem] = []
        if !sourceIDs.isEmpty { kinds.append(.source(random.pick(sourceIDs))) }
        if !timerIDs.isEmpty { kinds.append(.timer(random.pick(timerIDs))) }
        if !observerIDs.isEmpty { kinds.append(.observer(random.pick(observerIDs))) }
        return kinds.isEmpty ? nil : random.pick(kinds)
    }

    /// One step. `depth` > 0 generates a block's action (no item creation; fewer nested blocks and runs).
    mutating func next(model: LoopModel, depth: Int = 0) -> ModelOp {
        let roll = random.below(100)
        switch roll {
        case 0..<7 where depth == 0 && poolHasRoom(sourceIDs, isDead: { !model.sources[$0]!.member.valid }):
            return .createSource(id: newID(), order: random.below(3))
        case 7..<14 where depth == 0 && poolHasRoom(timerIDs, isDead: { !model.timers[$0]!.member.valid }):
            return .createTimer(id: newID(), due: due())
        case 14..<18 where depth == 0 && poolHasRoom(observerIDs, isDead: { !model.observers[$0]!.member.valid }):
            var activities: Loop.Activity = []
            for activity in modelActivities where random.chance(50) { activities.insert(activity) }
            if activities.isEmpty { activities = .all }
            let repeats = random.chance(95)
            return .createObserver(id: newID(), activities: activities, repeats: repeats, order: random.below(3))
        case 18..<32:
            if let item = item() { return .add(item, mode()) }
        case 32..<37:
            if let item = item() { return .remove(item, mode()) }
        case 37..<39:
            if let item = item() { return .invalidate(item) }
        case 39..<40 where depth == 0:
            if let item = item() { return .sequence([.invalidate(item), .add(item, mode())]) }
        case 40..<52:
            if !sourceIDs.isEmpty { return .signal(random.pick(sourceIDs)) }
        case 52..<56:
            if !timerIDs.isEmpty { return .setFireTime(random.pick(timerIDs), due()) }
        case 56..<68 where depth < 3:
            return .perform(block(depth: depth))
        case 68..<70:
            return .stop
        case 70..<72:
            return .wakeUp
        case 72..<100 where depth < 3:
            return run(nested: depth > 0)
        default:
            break
        }
        return sourceIDs.isEmpty ? .wakeUp : .signal(random.pick(sourceIDs))
    }

    private mutating func block(depth: Int) -> ModelBlock {
        let modes: [ModelMode] = random.chance(80) ? [mode()] : [mode(), mode()]
        let id = newID()
        var actions: [ModelOp] = []
        let count = depth >= 2 ? 0 : random.below(3)
        for _ in 0..<count {
            // A block's actions see whatever the model holds when it runs; they only name existing items.
            actions.append(next(model: LoopModel(), depth: depth + 1))
        }
        return ModelBlock(id: id, modes: modes, actions: actions)
    }

    /// A run. A top-level long run the model predicts would sleep is dropped by the caller; a nested one (a
    /// block's action) always has a stop queued first, or a block that could never run would block its mode.
    private mutating func run(nested: Bool) -> ModelOp {
        let mode = random.chance(3) ? ModelMode.common : mode(common: false)
        let poll = random.chance(55)
        let once = random.chance(40)
        let op = ModelOp.run(mode, poll: poll, returnAfterSourceHandled: once)
        if !poll && (nested || random.chance(70)) {
            return .sequence([
                .perform(
                    ModelBlock(
                        id: newID(), modes: [random.chance(70) ? mode : .common],
                        actions: [.stop])), op,
            ])
        }
        return op
    }
}
