import Glibc
import RunLoopKit

/// Executes ``ModelOp`` steps against a real loop and records its callouts the way ``LoopModel`` does.
///
/// Confined to the loop's thread (every callout runs there), hence unchecked Sendable.
final class ModelRealLoop: @unchecked Sendable {
    let loop: Loop
    /// Past fire times are this far behind the creation of the driver, plus a few nanoseconds.
    private let pastBase: Int64
    private let farTime: Loop.Instant
    var trace: [String] = []
    var sources: [Int: LoopSource] = [:]
    var timers: [Int: LoopTimer] = [:]
    var observers: [Int: LoopObserver] = [:]
    var descriptorSources: [Int: FileDescriptorSource] = [:]
    /// Each descriptor source's id, by object, and the ids of those still valid (the soak makes thousands).
    var descriptorIDsByObject: [ObjectIdentifier: Int] = [:]
    var liveDescriptorIDs: Set<Int> = []
    /// The test's descriptors: the watched end of a socket pair or pipe per slot, and the peer that makes it readable
    /// (-1 once the pipe's writer was closed).
    var watched: [CInt] = []
    var peers: [CInt] = []

    init(loop: Loop) {
        self.loop = loop
        let now = Loop.Instant.now
        pastBase = max(1_000, now.nanoseconds - 10_000_000_000)
        farTime = now + .seconds(3600)
        loop.addCommonMode(ModelMode.a.loopMode)
        for slot in 0..<LoopModel.slotCount {
            let (end, peer) = Self.descriptorPair(slot: slot)
            watched.append(end)
            peers.append(peer)
        }
    }

    private func instant(_ due: ModelDue) -> Loop.Instant {
        switch due {
        case .past(let offset): Loop.Instant(nanoseconds: pastBase + offset)
        case .far: farTime
        }
    }

    func execute(_ op: ModelOp) {
        switch op {
        case .createSource(let id, let order):
            sources[id] = LoopSource(
                order: order,
                schedule: { [weak self] _, mode in self?.trace.append("sched\(id)@\(mode)") },
                cancel: { [weak self] _, mode in self?.trace.append("cancel\(id)@\(mode)") },
                perform: { [weak self] _ in self?.trace.append("S\(id)") }
            )
        case .createTimer(let id, let due):
            timers[id] = try! LoopTimer(at: instant(due)) { [weak self] _ in self?.trace.append("T\(id)") }
        case .createObserver(let id, let activities, let repeats, let order):
            observers[id] = LoopObserver(activities: activities, repeats: repeats, order: order) {
                [weak self] _, activity in
                self?.trace.append("O\(id).\(activity)")
            }
        case .add(let item, let mode):
            do throws(LoopError) {
                switch item {
                case .source(let id): try loop.add(sources[id]!, to: mode.loopMode)
                case .timer(let id): try loop.add(timers[id]!, to: mode.loopMode)
                case .observer(let id): try loop.add(observers[id]!, to: mode.loopMode)
                case .descriptor(let id): try loop.add(descriptorSources[id]!, to: mode.loopMode)
                }
            } catch {
                trace.append("E:\(error.code)")
            }
        case .remove(let item, let mode):
            switch item {
            case .source(let id): loop.remove(sources[id]!, from: mode.loopMode)
            case .timer(let id): loop.remove(timers[id]!, from: mode.loopMode)
            case .observer(let id): loop.remove(observers[id]!, from: mode.loopMode)
            case .descriptor(let id): loop.remove(descriptorSources[id]!, from: mode.loopMode)
            }
        case .invalidate(let item):
            switch item {
            case .source(let id): sources[id]!.invalidate()
            case .timer(let id): timers[id]!.invalidate()
            case .observer(let id): observers[id]!.invalidate()
            case .descriptor(let id): descriptorSources[id]!.invalidate()
            }
        case .signal(let id):
            sources[id]!.signal()
        case .setFireTime(let id, let due):
            timers[id]!.setNextFireTime(instant(due))
        case .perform(let block):
            let body: @Sendable () -> Void = { [weak self] in
                guard let self else { return }
                trace.append("K\(block.id)")
                for action in block.actions { execute(action) }
            }
            if block.modes.count == 1 {
                loop.perform(in: block.modes[0].loopMode, body)
            } else {
                loop.perform(in: block.modes.map(\.loopMode), body)
            }
        case .run(let mode, let poll, let once):
            let result = loop.run(in: mode.loopMode, for: poll ? .zero : .seconds(10), returnAfterSourceHandled: once)
            trace.append("R:\(result)")
        case .stop:
            loop.stop()
        case .wakeUp:
            loop.wakeUp()
        case .sequence(let ops):
            for op in ops { execute(op) }
        case .createDescriptorSource, .setEvents, .makeReadable, .drain, .replaceDescriptor, .hangUp:
            executeDescriptorStep(op)
        }
    }

    /// Differences between the loop's observable item state and the model's; empty when they agree.
    func stateDifferences(from model: LoopModel) -> [String] {
        var differences: [String] = []
        func check(_ name: String, _ member: LoopModel.Membership, valid: Bool, contains: (Loop.Mode) -> Bool) {
            if valid != member.valid { differences.append("\(name).isValid is \(valid)") }
            for mode in ModelMode.concrete where contains(mode.loopMode) != member.modes.contains(mode) {
                differences.append("\(name) in \(mode) is \(!member.modes.contains(mode))")
            }
            if contains(.common) != member.isCommon { differences.append("\(name) common is \(!member.isCommon)") }
        }
        for (id, source) in sources {
            let expected = model.sources[id]!
            check("source \(id)", expected.member, valid: source.isValid) { loop.contains(source, in: $0) }
            if source.isSignalled != expected.signalled {
                differences.append("source \(id).isSignalled is \(source.isSignalled)")
            }
        }
        for (id, timer) in timers {
            check("timer \(id)", model.timers[id]!.member, valid: timer.isValid) { loop.contains(timer, in: $0) }
        }
        for (id, source) in descriptorSources {
            let expected = model.descriptorSources[id]!
            check("descriptor source \(id)", expected.member, valid: source.isValid) { loop.contains(source, in: $0) }
            if source.events != expected.events {
                differences.append("descriptor source \(id).events is \(source.events)")
            }
            if (source.failure != nil) != expected.failed {
                differences.append("descriptor source \(id).failure is \(source.failure.map { "\($0)" } ?? "nil")")
            }
        }
        for (id, observer) in observers {
            check("observer \(id)", model.observers[id]!.member, valid: observer.isValid) {
                loop.contains(observer, in: $0)
            }
        }
        return differences
    }
}
