import Glibc
import RunLoopKit
import RunLoopKitServices
import SplitMix64
import Synchronization

/// `SignalSource`s: the process sends itself signals from a driver thread (delivered to whichever thread the
/// kernel picks, interrupting waits everywhere). A real-time signal, which the kernel queues, is watched on the
/// first hub; SIGUSR2, which the kernel merges while one is pending, on the second; and every tenth round a source
/// for a second real-time signal is created, added, fed, invalidated and released (installing and restoring the
/// signal's disposition each time).
///
/// Checks: a real-time source reports exactly as many deliveries as `kill` succeeded; SIGUSR2's source reports at
/// least one delivery after each round's sends and never more than were sent; a released source's eventfd is closed.
final class SignalTraffic: Workload {
    private typealias RealTimeMinimum = @convention(c) () -> CInt

    /// SIGRTMIN, which Swift's Glibc module leaves out (it is a function call in C).
    static let realTimeMinimum: CInt = {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), "__libc_current_sigrtmin") else { return 34 }
        return unsafeBitCast(address, to: RealTimeMinimum.self)()
    }()

    private let hubs: [Hub]
    private let queued: Watched
    private let merged: Watched
    private let churned: Tally
    private let driver = DriverThread()
    private let seed: UInt64

    /// Sources on the hubs of `hubs`; `seed` drives the driver's choices.
    init(hubs: [Hub], seed: UInt64) throws {
        self.hubs = hubs
        self.seed = seed
        queued = try Watched(
            signal: Self.realTimeMinimum + 4, hub: hubs[0], mode: .common,
            tally: Tallies.shared.make("signals: real-time (queued)", promise: "deliveries = successful kills"))
        merged = try Watched(
            signal: SIGUSR2, hub: hubs[1], mode: .default,
            tally: Tallies.shared.make("signals: SIGUSR2 (merged)", promise: nil))
        churned = Tallies.shared.make("signals: sources created, fed and released", promise: nil)
    }

    func start(_ control: RunControl) throws {
        driver.start("signals", control: control, seed: seed) { [self] round, random in
            self.round()
            if round % 10 == 0 { churn(on: hubs.randomElement(using: &random)!) }
        }
    }

    func join() {
        driver.join()
    }

    func tearDown() {
        queued.source.invalidate()
        merged.source.invalidate()
        if merged.delivered > merged.sent {
            Violations.shared.record("signals: SIGUSR2 reported \(merged.delivered) deliveries of \(merged.sent) sent")
        }
    }

    private func round() {
        let mergedBefore = merged.delivered
        let sentToQueued = queued.send(8)
        let sentToMerged = merged.send(4)
        let deadline = Waiting.deadline(in: Limits.delivery)
        if !Waiting.until(deadline, { queued.delivered == queued.sent }) {
            Violations.shared.record(
                "signals: real-time: \(queued.sent) sent, \(queued.delivered) reported in \(Limits.deliverySeconds) s")
        }
        if sentToMerged > 0 && !Waiting.until(deadline, { merged.delivered > mergedBefore }) {
            Violations.shared.record(
                "signals: SIGUSR2 sent \(sentToMerged) times, none reported in \(Limits.deliverySeconds) s")
        }
        _ = sentToQueued
    }

    /// A source for a second real-time signal: made, added to `hub`, fed three deliveries, invalidated and released;
    /// once the loop let go of it, its eventfd is closed.
    private func churn(on hub: Hub) {
        let tally = Tally(kind: "churned signal source", promise: nil)
        var watched: Watched? = nil
        do {
            watched = try Watched(signal: Self.realTimeMinimum + 5, hub: hub, mode: .default, tally: tally)
        } catch {
            Violations.shared.record("signals: making a source threw \(error)")
            return
        }
        let sent = watched!.send(3)
        if !Waiting.until(Waiting.deadline(in: Limits.delivery), { watched!.delivered == sent }) {
            Violations.shared.record("signals: a fresh source reported \(watched!.delivered) of \(sent) deliveries")
        }
        watched!.source.invalidate()
        let released = WeakReference(watched!.source)
        watched = nil
        if !Waiting.until(Waiting.deadline(in: Limits.delivery), { released.isReleased }) {
            Violations.shared.record(
                "signals: an invalidated source was not released \(Limits.deliverySeconds) s later")
        }
        churned.deliver()
    }

    /// A signal source and its counts.
    private final class Watched: Sendable {
        let source: SignalSource
        let signal: CInt
        private let tally: Tally
        private let sentCount = Counter()
        private let deliveredCount = Counter()

        init(signal: CInt, hub: Hub, mode: Loop.Mode, tally: Tally) throws {
            self.signal = signal
            self.tally = tally
            let deliveredCount = deliveredCount
            source = try SignalSource(signal: signal) { _, count in
                deliveredCount.add(count)
                tally.deliver(count)
            }
            try hub.loop.add(source, to: mode)
        }

        /// Sends the signal to the process `count` times; answers how many `kill`s succeeded (a real-time signal's
        /// queue can be full).
        @discardableResult
        func send(_ count: Int) -> Int {
            var sent = 0
            for _ in 0..<count where kill(getpid(), signal) == 0 { sent += 1 }
            sentCount.add(sent)
            tally.expect(sent)
            return sent
        }

        /// Successful `kill`s.
        var sent: Int { sentCount.count }
        /// Deliveries the source reported.
        var delivered: Int { deliveredCount.count }
    }
}
