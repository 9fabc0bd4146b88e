import Glibc
import RunLoopKit
import RunLoopKitSystem
import SplitMix64
import Synchronization

/// `LoopThread` churn: a driver thread keeps creating a thread, giving it items (a custom source, a repeating
/// timer, an observer of every activity, a descriptor source on an eventfd, one-shot callbacks), calling into it
/// (`performAndWait`, signals, eventfd writes) while a poster thread posts blocks and function calls to it as fast
/// as it can, and stopping it: by `stop()` from the driver, by `stop()` from one of its own blocks, or by dropping
/// the last reference. The poster's posts race the stop.
///
/// Checks, once the thread is gone: every block and call its `perform` accepted ran exactly once, in order, and
/// the refused ones never ran; `perform` answers `false` and `performAndWait` throws `threadStopped` after a
/// `stop()`; the observer saw every run end; the source's cancels balanced its schedules (the exiting thread removes
/// its items); no descriptor or thread is left (counted at the checkpoints).
final class ThreadChurn: Workload {
    private let seed: UInt64
    private let driver = DriverThread()
    private let poster = Poster()
    private let threads: Tally
    private let blocks: Tally
    private let calls: Tally
    private let refused: Tally
    private let waits: Tally
    private let items: Tally
    private let eventCounts: Tally
    private let callbacks: Tally

    /// Churn driven by `seed`.
    init(seed: UInt64) {
        self.seed = seed
        threads = Tallies.shared.make("churn: LoopThreads created and stopped", promise: nil)
        blocks = Tallies.shared.make("churn: blocks accepted", promise: "each runs once, in order, stop racing")
        calls = Tallies.shared.make("churn: perform(with:) calls accepted", promise: "each runs once, stop racing")
        refused = Tallies.shared.make("churn: posts refused once the stop began", promise: nil)
        waits = Tallies.shared.make("churn: performAndWait", promise: "each runs once")
        items = Tallies.shared.make("churn: custom source items", promise: "each arrives once, in order")
        eventCounts = Tallies.shared.make("churn: eventfd counts", promise: "sum read = sum written")
        callbacks = Tallies.shared.make("churn: callbacks", promise: "each runs once")
    }

    func start(_ control: RunControl) throws {
        poster.start(refused: refused)
        driver.start("churn", control: control, seed: seed) { [self] serial, random in round(serial, &random) }
    }

    func join() {
        driver.join()
        poster.finish()
    }

    func tearDown() {}

    /// One thread's life.
    private func round(_ serial: Int, _ random: inout SplitMix64) {
        let target: Target
        do {
            target = try Target(
                serial: serial, blocks: blocks, calls: calls, waits: waits, items: items, eventCounts: eventCounts,
                callbacks: callbacks)
        } catch {
            Violations.shared.record("churn: starting LoopThread \(serial) threw \(error)")
            return
        }
        threads.deliver()
        poster.assign(target)
        for _ in 0..<Int.random(in: 1...12, using: &random) {
            target.callAndWait()
            target.pushItem()
            target.writeEventFD()
        }
        if !Waiting.until(Waiting.deadline(in: Limits.delivery), { target.isSettled }) {
            target.verifySettled("\(Limits.deliverySeconds) s before its stop")
        }
        let style = Int.random(in: 0..<3, using: &random)
        let ledger = target.ledger
        let finalChecks = target.finalChecks
        switch style {
        case 0:
            target.thread.stop()  // Races the poster's posts.
            poster.release()
            target.verifyRefusesWork()
        case 1:
            let thread = target.thread
            thread.perform { thread.stop() }  // Begins the stop on the thread itself.
            thread.stop()  // Joins it.
            poster.release()
            target.verifyRefusesWork()
        default:
            poster.release()
        }
        _ = consume target  // Style 2: the last reference goes, and the LoopThread's deinit stops and joins it.
        ledger.verifyFinished()
        finalChecks()
    }

    /// One churned thread, its items and its channels.
    private final class Target: Sendable {
        let thread: LoopThread
        let ledger: ActivityLedger
        let blocks: Channel
        let calls: Channel
        let callSlot: Int
        let waits: Channel
        let items: Channel
        let mailbox = Mailbox()
        let source: LoopSource
        let balance: ScheduleBalance
        let eventFD: CInt
        let eventsWritten = Counter()
        let eventsRead = Counter()
        let eventTally: Tally
        let callbackRan = Counter()

        init(
            serial: Int, blocks blockTally: Tally, calls callTally: Tally, waits waitTally: Tally,
            items itemTally: Tally,
            eventCounts: Tally, callbacks: Tally
        ) throws {
            let name = "churn-\(serial)"
            thread = try LoopThread(name: name)
            ledger = ActivityLedger(name, joinsMidRun: true)
            blocks = Channel("poster → \(name) blocks", tally: blockTally, strictOrder: true)
            calls = Channel("poster → \(name) perform(with:)", tally: callTally, strictOrder: true)
            callSlot = FunctionCallSlots.shared.claim(calls)
            waits = Channel("churn → \(name) performAndWait", tally: waitTally, strictOrder: true)
            let items = Channel("churn → \(name) source items", tally: itemTally, strictOrder: true)
            self.items = items
            let mailbox = mailbox
            let balance = ScheduleBalance("source of \(name)")
            self.balance = balance
            source = LoopSource(
                schedule: { _, mode in balance.scheduled(mode) },
                cancel: { _, mode in balance.cancelled(mode) },
                perform: { _ in for sequence in mailbox.takeAll() { items.receive(sequence) } })
            eventFD = Descriptors.eventFD()
            eventTally = eventCounts
            let (descriptor, eventsRead) = (eventFD, eventsRead)
            let reader = try FileDescriptorSource(descriptor: descriptor) { _, _ in
                let value = Int(Descriptors.takeEventFD(descriptor))
                eventsRead.add(value)
                eventCounts.deliver(value)
            }
            let timer = try LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { _ in }
            let loop = thread.loop
            try loop.add(source, to: .common)
            try loop.add(reader)
            try loop.add(timer)
            let ledger = ledger
            try thread.performAndWait { try Loop.current.add(ledger.makeObserver(), to: .common) }
            let callbackRan = callbackRan
            callbacks.expect()
            try loop.schedule(after: .zero) {
                callbackRan.add()
                callbacks.deliver()
            }
            try loop.schedule(after: .seconds(3600)) {
                Violations.shared.record("churn: a callback due in an hour ran")
            }
        }

        /// Posts from the poster that have not run yet.
        var backlog: Int { blocks.posted + calls.posted - blocks.received - calls.received }

        /// `performAndWait` with a numbered block.
        func callAndWait() {
            let waits = waits
            let sequence = waits.reserve()
            do {
                let answer = try thread.performAndWait { () -> Int in
                    waits.receive(sequence)
                    return sequence
                }
                if answer != sequence { Violations.shared.record("\(waits.label): answered \(answer)") }
            } catch {
                waits.refuse(sequence)
                Violations.shared.record("\(waits.label): threw \(error) before any stop")
            }
        }

        /// Puts a numbered item in the source's mailbox and signals it.
        func pushItem() {
            let sequence = items.reserve()
            mailbox.put(sequence)
            source.signal()
        }

        /// Adds to the eventfd's count.
        func writeEventFD() {
            let value = 1 + eventsWritten.count % 7
            guard Descriptors.add(UInt64(value), toEventFD: eventFD) else { return }
            eventsWritten.add(value)
            eventTally.expect(value)
        }

        /// Whether the driver's items, eventfd counts and callback all arrived.
        var isSettled: Bool {
            items.isComplete && eventsRead.count == eventsWritten.count && callbackRan.count == 1
        }

        /// Records what did not arrive; `context` says when.
        func verifySettled(_ context: String) {
            items.verifyComplete(context)
            let (written, read) = (eventsWritten.count, eventsRead.count)
            if written != read { Violations.shared.record("\(thread.name): eventfd \(written) written, \(read) read") }
            if callbackRan.count != 1 {
                Violations.shared.record("\(thread.name): the zero-delay callback ran \(callbackRan.count) times")
            }
        }

        /// After `stop()`: posts are refused, `performAndWait` throws `threadStopped`.
        func verifyRefusesWork() {
            if thread.perform({ Violations.shared.record("churn: a block accepted after stop() ran") }) {
                Violations.shared.record("\(thread.name): perform answered true after stop() returned")
            }
            do {
                try thread.performAndWait {}
                Violations.shared.record("\(thread.name): performAndWait returned after stop() returned")
            } catch let error as LoopError where error.code == .threadStopped {
            } catch {
                Violations.shared.record("\(thread.name): performAndWait after stop() threw \(error)")
            }
        }

        /// What to close and check once the thread has exited: the eventfd, the function-call slot, the channels.
        var finalChecks: @Sendable () -> Void {
            let (blocks, calls, waits, balance, callSlot) = (blocks, calls, waits, balance, callSlot)
            let eventFD = eventFD
            return {
                blocks.verifyComplete("after the thread exited")
                calls.verifyComplete("after the thread exited")
                waits.verifyComplete("after the thread exited")
                if !balance.isBalanced { Violations.shared.record("churn: a source left schedules without cancels") }
                FunctionCallSlots.shared.release(callSlot)
                close(eventFD)
            }
        }
    }

    /// The thread that posts to the current churned thread as fast as it can until the driver takes it away.
    private final class Poster: Sendable {
        private let current = Mutex<Target?>(nil)
        private let exiting = Atomic<Bool>(false)
        private let wake = Semaphore()
        private let done = Semaphore()
        private let thread = Mutex<JoinableThread?>(nil)

        /// Starts the poster thread; refused posts are counted in `refused`.
        func start(refused: Tally) {
            thread.withLock {
                $0 = JoinableThread(name: "churn-poster") { [self] in
                    while true {
                        wake.wait()
                        if exiting.load(ordering: .acquiring) { return }
                        if let target = current.withLock({ $0 }) { post(to: target, refused: refused) }
                        done.post()
                    }
                }
            }
        }

        /// Hands `target` to the poster.
        func assign(_ target: Target) {
            current.withLock { $0 = target }
            wake.post()
        }

        /// Takes the target away and waits until the poster is done with it (its last post returned).
        func release() {
            current.withLock { $0 = nil }
            done.wait()
        }

        /// Ends the poster thread.
        func finish() {
            exiting.store(true, ordering: .releasing)
            wake.post()
            thread.withLock { $0 }?.join()
        }

        /// Posts as fast as it can, keeping at most about a thousand posts waiting for the thread (an unbounded backlog
        /// would measure the backlog, not the library), until the target is taken away.
        private func post(to target: Target, refused: Tally) {
            var turn = 0
            while current.withLock({ $0 === target }) {
                turn += 1
                if turn % 64 == 0 && target.backlog > 1024 {
                    Waiting.until(.distantFuture, every: .microseconds(100)) {
                        target.backlog < 256 || current.withLock { $0 !== target }
                    }
                }
                let accepted: Bool
                let channel = turn % 4 == 3 ? target.calls : target.blocks
                let sequence = channel.reserve()
                switch turn % 4 {
                case 0: accepted = target.thread.perform { channel.receive(sequence) }
                case 1: accepted = target.thread.loop.perform { channel.receive(sequence) }
                case 2: accepted = target.thread.perform(in: [.default, .common]) { channel.receive(sequence) }
                default:
                    let argument = FunctionCallSlots.shared.argument(slot: target.callSlot, sequence: sequence)
                    accepted = target.thread.perform(with: argument, FunctionCallSlots.function)
                }
                if turn % 16 == 0 { target.source.signal() }
                if !accepted {
                    channel.refuse(sequence)
                    refused.deliver()
                    // The stop began: nothing more will be accepted. Wait for the driver to take the target away.
                    Waiting.until(.distantFuture) { current.withLock { $0 !== target } }
                }
            }
        }
    }
}
