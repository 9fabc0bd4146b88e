import RunLoopKit
import SplitMix64

/// Draws random ``ModelOp`` steps from a seeded PRNG, keeping small pools of live item ids.
struct ModelGenerator {
    var random: SplitMix64
    private(set) var sourceIDs: [Int] = []
    private(set) var timerIDs: [Int] = []
    private(set) var observerIDs: [Int] = []
    private(set) var descriptorIDs: [Int] = []
    private var nextID = 0
    /// Counts descriptor sources made with handler actions, which get orders of their own (``createDescriptorSource``).
    private var actingSources = 0
    static let poolSize = 6
    /// Descriptor sources come and go faster (pairs, replaced descriptors): a larger pool.
    static let descriptorPoolSize = 8

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
        case .sequence(let ops): for op in ops { accept(op, model: model) }
        case .createSource(let id, _): Self.insert(id, into: &sourceIDs) { !model.sources[$0]!.member.valid }
        case .createTimer(let id, _): Self.insert(id, into: &timerIDs) { !model.timers[$0]!.member.valid }
        case .createObserver(let id, _, _, _):
            Self.insert(id, into: &observerIDs) { !model.observers[$0]!.member.valid }
        case .createDescriptorSource(let id, _, _, _, _):
            Self.insert(id, into: &descriptorIDs, size: Self.descriptorPoolSize) {
                !model.descriptorSources[$0]!.member.valid
            }
        default: break
        }
    }

    private static func insert(_ id: Int, into pool: inout [Int], size: Int = poolSize, isDead: (Int) -> Bool) {
        if pool.count >= size, let index = pool.firstIndex(where: isDead) { pool.remove(at: index) }
        pool.append(id)
    }

    private func poolHasRoom(_ pool: [Int], size: Int = poolSize, isDead: (Int) -> Bool) -> Bool {
        pool.count < size || pool.contains(where: isDead)
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
        if !descriptorIDs.isEmpty { kinds.append(.descriptor(random.pick(descriptorIDs))) }
        return kinds.isEmpty ? nil : random.pick(kinds)
    }

    /// One step. `depth` > 0 generates a block's action (no item creation; fewer nested blocks and runs).
    mutating func next(model: LoopModel, depth: Int = 0) -> ModelOp {
        if random.chance(30) { return descriptorStep(model: model, depth: depth) }
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
    /// block's action) always has a stop queued first, in a mode it runs (a nested run of a mode with an ever-ready
    /// descriptor never ends otherwise), or a block that could never run would block its mode.
    private mutating func run(nested: Bool) -> ModelOp {
        let mode = random.chance(3) ? ModelMode.common : mode(common: false)
        let poll = random.chance(55)
        let once = random.chance(40)
        let op = ModelOp.run(mode, poll: poll, returnAfterSourceHandled: once)
        if !poll && (nested || random.chance(70)) {
            return .sequence([
                .perform(
                    ModelBlock(
                        id: newID(), modes: [random.chance(70) || !ModelMode.commonSet.contains(mode) ? mode : .common],
                        actions: [.stop])), op,
            ])
        }
        return op
    }

    // MARK: Descriptor sources

    private mutating func events() -> FileDescriptorSource.Events {
        random.pick([[.readable], [.readable], [.writable], [.readable, .writable], []])
    }

    /// A descriptor step. Creation and replacing a descriptor only at the top level.
    private mutating func descriptorStep(model: LoopModel, depth: Int) -> ModelOp {
        let roll = random.below(100)
        let slot = random.below(LoopModel.slotCount)
        let isDead: (Int) -> Bool = { !model.descriptorSources[$0]!.member.valid }
        switch roll {
        case 0..<12 where depth == 0 && poolHasRoom(descriptorIDs, size: Self.descriptorPoolSize, isDead: isDead):
            return createDescriptorSource(slot: slot, model: model)
        case 12..<18 where depth == 0:
            // Room for two: the oldest live sources are invalidated first if need be.
            let dead = descriptorIDs.count(where: isDead)
            let missing = max(0, 2 - (Self.descriptorPoolSize - descriptorIDs.count) - dead)
            let retired = descriptorIDs.filter { !isDead($0) }.prefix(missing).map {
                ModelOp.invalidate(.descriptor($0))
            }
            return sharedDescriptorPair(slot: slot, after: Array(retired))
        case 18..<34:
            if !descriptorIDs.isEmpty { return .add(.descriptor(random.pick(descriptorIDs)), mode()) }
        case 34..<40:
            if !descriptorIDs.isEmpty { return .remove(.descriptor(random.pick(descriptorIDs)), mode()) }
        case 40..<44:
            if !descriptorIDs.isEmpty { return .invalidate(.descriptor(random.pick(descriptorIDs))) }
        case 44..<60:
            if !descriptorIDs.isEmpty { return .setEvents(random.pick(descriptorIDs), events()) }
        case 60..<78:
            return .makeReadable(slot: slot)
        case 78..<96:
            return .drain(slot: slot)
        case 96..<98 where depth == 0:
            return .replaceDescriptor(slot: slot)
        case 98..<100 where depth == 0:
            return .hangUp(slot: LoopModel.pipeSlot)
        default:
            break
        }
        return .makeReadable(slot: slot)
    }

    /// A source on `slot`. Most handlers only record their call (orders 0, 10, 20: ties are common); some then act
    /// (drain their descriptor, change what a source watches, add, remove, invalidate, signal, run nested...), and
    /// those get orders of their own (1-9, 11-19, in turn; never a multiple of 10), as the model can only predict tied
    /// calls that do not affect each other (it drops a step where two tied ready sources include one that acts).
    private mutating func createDescriptorSource(slot: Int, model: LoopModel) -> ModelOp {
        let id = newID()
        var actions: [ModelOp] = []
        var order = 10 * random.below(3)
        if random.chance(40) {
            actingSources += 1
            order = 1 + actingSources % 9 + (random.chance(25) ? 10 : 0)
            let count = 1 + random.below(2)
            for _ in 0..<count {
                // Acting on another source too, which may be ready in the same pass: it is told what it watches
                // when it is called, and not called once out of the running mode. Mostly a live source of the same
                // descriptor, which is reported in the same pass.
                let sameSlot = descriptorIDs.filter {
                    model.descriptorSources[$0]!.slot == slot && model.descriptorSources[$0]!.member.valid
                }
                let other =
                    !sameSlot.isEmpty && random.chance(70)
                    ? random.pick(sameSlot) : descriptorIDs.isEmpty ? id : random.pick(descriptorIDs)
                switch random.below(12) {
                case 0..<3: actions.append(.drain(slot: slot))
                case 3: actions.append(.setEvents(id, events()))
                case 4: actions.append(.invalidate(.descriptor(id)))
                case 5..<7: actions.append(.setEvents(other, events()))
                case 7:
                    actions.append(
                        random.chance(50) ? .invalidate(.descriptor(other)) : .remove(.descriptor(other), mode()))
                default: actions.append(next(model: LoopModel(), depth: 2))
                }
            }
        }
        // A handler that runs the loop again first stops watching (a one-shot), or the nested run would call it again.
        if actions.contains(where: \.runsTheLoop) { actions.insert(.setEvents(id, []), at: 0) }
        return .createDescriptorSource(id: id, slot: slot, events: events(), order: order, actions: actions)
    }

    /// Two sources of one descriptor in one mode, ready: the first (lower order) changes what the second watches,
    /// or takes it out, from its handler, before the second's call in the same pass.
    private mutating func sharedDescriptorPair(slot: Int, after retired: [ModelOp]) -> ModelOp {
        let second = newID()
        let first = newID()
        actingSources += 1
        let action: ModelOp =
            switch random.below(4) {
            case 0, 1: .setEvents(second, events())
            case 2: .remove(.descriptor(second), .common)
            default: .invalidate(.descriptor(second))
            }
        let mode = mode()
        var steps: [ModelOp] =
            retired + [
                .createDescriptorSource(
                    id: second, slot: slot, events: events(), order: 10 * (1 + random.below(2)), actions: []),
                .createDescriptorSource(
                    id: first, slot: slot, events: [.readable], order: 1 + actingSources % 9, actions: [action]),
                .add(.descriptor(second), mode), .add(.descriptor(first), mode), .makeReadable(slot: slot),
            ]
        // Often a pass of that mode at once (later steps may change the picture first).
        if random.chance(50) {
            steps.append(.run(mode == .common ? .default : mode, poll: true, returnAfterSourceHandled: false))
        }
        return .sequence(steps)
    }
}
