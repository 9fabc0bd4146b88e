import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// Custom sources (`LoopSource`) signalled from other threads: on each hub, one in the default mode, one in the
/// common modes (also served by nested runs), one in the private mode (served only by nested runs), and one signalled
/// by blocks running on the other hub.
///
/// Signals coalesce, so deliveries are counted through a mailbox: the producer puts a numbered item in the
/// source's mailbox, then signals; each perform empties the mailbox. A lost signal leaves items behind for good
/// (nothing signals again within the round), so "every item arrives once, in order" checks that no signal is lost.
/// Every eighth round one source is invalidated from the driver's thread and replaced; its schedule and cancel
/// handlers must balance once the loop applied the invalidation.
final class SourceTraffic: Workload {
    private let hubs: [Hub]
    private let items: Tally
    private let performs: Tally
    private let replaced: Tally
    private let endpoints: [Endpoint]
    private let thread = Mutex<JoinableThread?>(nil)

    /// Sources on every hub of `hubs`.
    init(hubs: [Hub]) throws {
        self.hubs = hubs
        items = Tallies.shared.make("custom sources: items signalled", promise: "each arrives once, in order")
        performs = Tallies.shared.make("custom sources: performs", promise: nil)
        replaced = Tallies.shared.make("custom sources: replaced (schedule = cancel)", promise: nil)
        var endpoints: [Endpoint] = []
        for (index, hub) in hubs.enumerated() {
            let other = hubs[(index + 1) % hubs.count]
            for (mode, relay) in [(Loop.Mode.default, nil), (.common, nil), (Hub.privateMode, nil), (.default, other)] {
                let label = "source in \(mode) of \(hub.name)" + (relay.map { " signalled from \($0.name)" } ?? "")
                endpoints.append(
                    try Endpoint(
                        label, hub: hub, mode: mode, relay: relay, order: endpoints.count % 3, items: items,
                        performs: performs))
            }
        }
        self.endpoints = endpoints
    }

    func start(_ control: RunControl) throws {
        let name = "sources"
        control.register(name)
        let endpoints = endpoints
        let replaced = replaced
        thread.withLock {
            $0 = JoinableThread(name: name) {
                var round = 0
                while control.checkpoint(name) {
                    for endpoint in endpoints { endpoint.post(24) }
                    let deadline = Waiting.deadline(in: Limits.delivery)
                    if !Waiting.until(deadline, { endpoints.allSatisfy(\.channel.isComplete) }) {
                        for endpoint in endpoints {
                            endpoint.channel.verifyComplete("\(Limits.deliverySeconds) s after its signals")
                        }
                    }
                    round += 1
                    if round % 8 == 0 {
                        endpoints[(round / 8) % endpoints.count].replaceSource()
                        replaced.deliver()
                    }
                }
            }
        }
    }

    func join() {
        thread.withLock { $0 }?.join()
    }

    func tearDown() {
        for endpoint in endpoints { endpoint.invalidate() }
    }

    /// One source, its mailbox and its channel; the source is replaced now and then.
    private final class Endpoint: Sendable {
        let channel: Channel
        let hub: Hub
        let mode: Loop.Mode
        /// The hub whose blocks put items in the mailbox and signal, or `nil` for the driver's thread.
        let relay: Hub?
        let order: Int
        let performs: Tally
        let mailbox = Mailbox()
        /// The source in service and its schedule balance; set once the endpoint exists.
        let current = Mutex<(source: LoopSource, balance: ScheduleBalance)?>(nil)

        init(
            _ label: String, hub: Hub, mode: Loop.Mode, relay: Hub?, order: Int, items: Tally, performs: Tally
        ) throws {
            channel = Channel(label, tally: items, strictOrder: true)
            self.hub = hub
            self.mode = mode
            self.relay = relay
            self.order = order
            self.performs = performs
            let balance = ScheduleBalance(label)
            let source = makeSource(balance)
            current.withLock { $0 = (source, balance) }
            try hub.loop.add(source, to: mode)
        }

        /// A source whose perform empties the mailbox, counting schedules and cancels in `balance`.
        private func makeSource(_ balance: ScheduleBalance) -> LoopSource {
            let (channel, performs) = (channel, performs)
            return LoopSource(
                order: order,
                schedule: { _, mode in balance.scheduled(mode) },
                cancel: { _, mode in balance.cancelled(mode) },
                perform: { [self] _ in
                    for sequence in mailbox.takeAll() { channel.receive(sequence) }
                    performs.deliver()
                })
        }

        /// Puts `count` numbered items in the mailbox, signalling after each: from the driver's thread, or from a
        /// block on the relay hub. The source is looked up after each item, so an item put while the source is
        /// being replaced is taken by the replacement (signalled once it is in place).
        func post(_ count: Int) {
            let sequences = (0..<count).map { _ in channel.reserve() }
            guard let relay else { return deliver(sequences) }
            if !relay.loop.perform({ [self] in deliver(sequences) }) {
                Violations.shared.record("\(channel.label): the relay hub refused a block")
            }
        }

        private func deliver(_ sequences: [Int]) {
            for sequence in sequences {
                mailbox.put(sequence)
                current.withLock { $0!.source }.signal()
            }
        }

        /// Invalidates the source from this thread and puts a new one in its place, signalled so that it takes
        /// over whatever the old one left in the mailbox; the old one's schedules and cancels must balance.
        func replaceSource() {
            let balance = ScheduleBalance(channel.label)
            let fresh = makeSource(balance)
            let (old, oldBalance) = current.withLock { current in
                defer { current = (fresh, balance) }
                return current!
            }
            old.invalidate()
            do {
                try hub.loop.add(fresh, to: mode)
            } catch {
                Violations.shared.record("\(channel.label): adding the replacement threw \(error)")
            }
            fresh.signal()
            oldBalance.verifyBalanced(within: Limits.delivery)
        }

        /// Invalidates the current source for good (and lets go of it: its perform holds this endpoint); its
        /// schedules and cancels must balance.
        func invalidate() {
            let (source, balance) = current.withLock { current in
                defer { current = nil }
                return current!
            }
            source.invalidate()
            balance.verifyBalanced(within: Limits.delivery)
        }
    }
}

/// Counts a custom source's schedule and cancel calls per mode: after the source is invalidated (and the loop
/// applied it), every schedule must have had its cancel.
final class ScheduleBalance: Sendable {
    private let label: String
    private let counts = Mutex<[Loop.Mode: Int]>([:])

    /// A balance for the source named `label`.
    init(_ label: String) {
        self.label = label
    }

    /// The schedule handler: the source joined `mode`. A second schedule without a cancel is a violation.
    func scheduled(_ mode: Loop.Mode) {
        let count = counts.withLock { counts in
            counts[mode, default: 0] += 1
            return counts[mode]!
        }
        if count != 1 { Violations.shared.record("\(label): scheduled in \(mode) twice without a cancel") }
    }

    /// The cancel handler: the source left `mode`. A cancel without a schedule is a violation.
    func cancelled(_ mode: Loop.Mode) {
        let count = counts.withLock { counts in
            counts[mode, default: 0] -= 1
            return counts[mode]!
        }
        if count != 0 { Violations.shared.record("\(label): cancelled in \(mode) without a schedule") }
    }

    /// Whether no mode is scheduled without its cancel.
    var isBalanced: Bool { counts.withLock { $0.values.allSatisfy { $0 == 0 } } }

    /// Waits up to `timeout` for the balance (the loop applies an invalidation from another thread at its next
    /// pass); records a violation if it does not come.
    func verifyBalanced(within timeout: Duration) {
        if !Waiting.until(Waiting.deadline(in: timeout), { isBalanced }) {
            Violations.shared.record("\(label): schedules without cancels \(timeout) after invalidate()")
        }
    }
}
