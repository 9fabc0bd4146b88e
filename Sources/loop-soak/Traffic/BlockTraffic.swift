import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Blocks posted to the hubs from other threads through every posting call: `Loop.perform` (default, common and a
/// private mode), `Loop.perform(with:)`, `LoopThread.perform` (one mode and a list), `LoopThread.perform(with:)` and
/// `LoopThread.performAndWait`.
///
/// Each producer thread numbers its blocks per hub and route (``Channel``). A round posts a batch on every route to
/// every hub, then calls `performAndWait` as a barrier: on a hub that keeps block order, every block posted before
/// it for a mode the barrier's pass serves must have run when it returns. The round ends once every block arrived.
final class BlockTraffic: Workload {
    /// How a block reaches a hub.
    enum Route: CaseIterable {
        case loopPerform, loopPerformCommon, loopPerformPrivate, loopFunctionCall
        case threadPerform, threadPerformModes, threadFunctionCall, performAndWait

        /// The report's name for the route.
        var name: String {
            switch self {
            case .loopPerform: "Loop.perform"
            case .loopPerformCommon: "Loop.perform(in: .common)"
            case .loopPerformPrivate: "Loop.perform(in: private mode)"
            case .loopFunctionCall: "Loop.perform(with:)"
            case .threadPerform: "LoopThread.perform"
            case .threadPerformModes: "LoopThread.perform(in: [modes])"
            case .threadFunctionCall: "LoopThread.perform(with:)"
            case .performAndWait: "LoopThread.performAndWait"
            }
        }

        /// Whether the barrier's pass (the default mode) also serves the route's blocks.
        var servedByDefaultPass: Bool { self != .loopPerformPrivate }
    }

    private let hubs: [Hub]
    private let producers: Int
    private let tallies: [Route: Tally]
    private let threads = Mutex<[JoinableThread]>([])

    /// Traffic from `producers` threads to `hubs`.
    init(hubs: [Hub], producers: Int) {
        self.hubs = hubs
        self.producers = producers
        var tallies: [Route: Tally] = [:]
        for route in Route.allCases {
            tallies[route] = Tallies.shared.make(
                "blocks: \(route.name)", promise: "each runs once; in order on the ordered hub")
        }
        self.tallies = tallies
    }

    func start(_ control: RunControl) throws {
        for producer in 0..<producers {
            let name = "blocks-\(producer)"
            control.register(name)
            let producerState = Producer(producer: producer, hubs: hubs, tallies: tallies)
            threads.withLock {
                $0.append(
                    JoinableThread(name: name) {
                        while control.checkpoint(name) { producerState.round() }
                        producerState.releaseSlots()
                    })
            }
        }
    }

    func join() {
        for thread in threads.withLock({ $0 }) { thread.join() }
    }

    func tearDown() {}

    /// One producer thread's channels and rounds.
    private final class Producer: @unchecked Sendable {  // Unchecked: used by its producer thread only.
        let hubs: [Hub]
        /// Per hub, per route.
        let channels: [[Route: Channel]]
        /// Per hub: the function-call slots of the two function-call routes.
        let slots: [[Route: Int]]
        let batch = 16

        init(producer: Int, hubs: [Hub], tallies: [Route: Tally]) {
            self.hubs = hubs
            var channels: [[Route: Channel]] = []
            var slots: [[Route: Int]] = []
            for hub in hubs {
                var hubChannels: [Route: Channel] = [:]
                var hubSlots: [Route: Int] = [:]
                for route in Route.allCases {
                    let channel = Channel(
                        "blocks-\(producer) → \(hub.name) via \(route.name)", tally: tallies[route]!,
                        strictOrder: hub.keepsBlockOrder)
                    hubChannels[route] = channel
                    if route == .loopFunctionCall || route == .threadFunctionCall {
                        hubSlots[route] = FunctionCallSlots.shared.claim(channel)
                    }
                }
                channels.append(hubChannels)
                slots.append(hubSlots)
            }
            self.channels = channels
            self.slots = slots
        }

        /// A batch on every route to every hub, a barrier per hub, then a wait until every block arrived.
        func round() {
            for (index, hub) in hubs.enumerated() {
                for route in Route.allCases where route != .performAndWait {
                    for _ in 0..<batch { post(route, to: hub, index) }
                }
                barrier(hub, index)
            }
            let everything = channels.flatMap(\.values)
            if !Waiting.until(Waiting.deadline(in: Limits.delivery), { everything.allSatisfy(\.isComplete) }) {
                for channel in everything {
                    channel.verifyComplete("\(Limits.deliverySeconds) s after the round's posts")
                }
            }
        }

        private func post(_ route: Route, to hub: Hub, _ index: Int) {
            let channel = channels[index][route]!
            let sequence = channel.reserve()
            let accepted: Bool
            switch route {
            case .loopPerform:
                accepted = hub.loop.perform { channel.receive(sequence) }
            case .loopPerformCommon:
                accepted = hub.loop.perform(in: .common) { channel.receive(sequence) }
            case .loopPerformPrivate:
                accepted = hub.loop.perform(in: Hub.privateMode) { channel.receive(sequence) }
            case .loopFunctionCall:
                let argument = FunctionCallSlots.shared.argument(slot: slots[index][route]!, sequence: sequence)
                accepted = hub.loop.perform(with: argument, FunctionCallSlots.function)
            case .threadPerform:
                accepted = hub.thread.perform { channel.receive(sequence) }
            case .threadPerformModes:
                accepted = hub.thread.perform(in: [.default, Hub.nestedMode]) { channel.receive(sequence) }
            case .threadFunctionCall:
                let argument = FunctionCallSlots.shared.argument(slot: slots[index][route]!, sequence: sequence)
                accepted = hub.thread.perform(with: argument, FunctionCallSlots.function)
            case .performAndWait:
                accepted = false  // Posted by ``barrier(_:_:)``.
            }
            if !accepted {
                channel.refuse(sequence)
                Violations.shared.record("\(channel.label): a live hub refused a block")
            }
        }

        /// `performAndWait` on `hub`; on a hub that keeps block order, everything posted before for the default
        /// mode's passes must have run by the time it returns.
        private func barrier(_ hub: Hub, _ index: Int) {
            let channel = channels[index][.performAndWait]!
            let sequence = channel.reserve()
            do {
                let answer = try hub.thread.performAndWait { () -> Int in
                    channel.receive(sequence)
                    return sequence
                }
                if answer != sequence {
                    Violations.shared.record("\(channel.label): answered \(answer) for #\(sequence)")
                }
            } catch {
                channel.refuse(sequence)
                Violations.shared.record("\(channel.label): a live hub threw \(error)")
            }
            guard hub.keepsBlockOrder else { return }
            for route in Route.allCases where route.servedByDefaultPass {
                channels[index][route]!.verifyComplete("when a later performAndWait returned")
            }
        }

        /// Frees the function-call slots once the producer posts no more and its calls have all arrived.
        func releaseSlots() {
            for hubSlots in slots {
                for slot in hubSlots.values { FunctionCallSlots.shared.release(slot) }
            }
        }
    }
}
