import RunLoopKitSystem
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// ``LoopPort``: order per sender, exactly-once delivery, the full ring's overflow, the end (invalidation, the loop's
/// thread exiting), waking a sleeping loop and not writing the eventfd of an awake one, the batch send.
@Suite struct LoopPortTests {
    /// A message from one of several senders: who sent it, and its place in that sender's sequence.
    struct Numbered: Sendable {
        let sender: Int
        let index: Int
    }

    /// What the loop's thread saw, touched by that thread only while it runs and read by the test after a join.
    final class Seen: @unchecked Sendable {
        var next: [Int]
        var outOfOrder = 0
        var received = 0
        init(senders: Int) { next = Array(repeating: 0, count: senders) }
        func note(_ message: Numbered) {
            if message.index != next[message.sender] { outOfOrder += 1 }
            next[message.sender] = message.index + 1
            received += 1
        }
    }

    /// An object that counts its releases, to catch a message leaked or released twice.
    final class Tracked: Sendable {
        let releases: Counter
        init(_ releases: Counter) { self.releases = releases }
        deinit { releases.increment() }
    }

    struct Carrying: Sendable {
        let tracked: Tracked
    }

    /// Sends `perSender` numbered messages from each of `senders` threads to a port of `capacity` on a loop thread,
    /// and answers what the loop saw once every message arrived (or ten seconds passed).
    func sendFromSeveralThreads(senders: Int, perSender: Int, capacity: Int) -> (Seen, Int) {
        let seen = Seen(senders: senders)
        let received = Atomic<Int>(0)
        let port = LoopPort<Numbered>(capacity: capacity) { message in
            seen.note(message)
            received.add(1, ordering: .relaxed)
        }
        let total = senders * perSender
        let (_, thread) = startLoopThread { loop in
            try! loop.add(port)
            ItemsSupport.run(loop, timeout: .seconds(60)) { received.load(ordering: .relaxed) == total }
        }
        let accepted = Atomic<Int>(0)
        let threads = (0..<senders).map { sender in
            TestThread {
                for index in 0..<perSender where port.send(Numbered(sender: sender, index: index)) {
                    accepted.add(1, ordering: .relaxed)
                }
            }
        }
        for sender in threads { sender.join() }
        thread.join()
        port.invalidate()
        return (seen, accepted.load(ordering: .relaxed))
    }

    @Test(arguments: [2, 64]) func eachSendersMessagesArriveInOrder(capacity: Int) {
        // Small rings: senders also go through the overflow (with 2 slots, most of the time), which must keep their
        // order too, however the ring and the list take turns.
        let (seen, accepted) = sendFromSeveralThreads(senders: 4, perSender: 20_000, capacity: capacity)
        #expect(accepted == 80_000)
        #expect(seen.received == 80_000)
        #expect(seen.outOfOrder == 0)
        #expect(seen.next == [20_000, 20_000, 20_000, 20_000])
    }

    @Test func everyMessageArrivesExactlyOnceUnderThreeSendersOf100k() {
        let (seen, accepted) = sendFromSeveralThreads(senders: 3, perSender: 100_000, capacity: 1024)
        #expect(accepted == 300_000)
        // In order per sender and as many as sent: no message lost, none duplicated.
        #expect(seen.received == 300_000)
        #expect(seen.outOfOrder == 0)
        #expect(seen.next == [100_000, 100_000, 100_000])
    }

    @Test func aFullRingOverflowsInOrderAndEachPassDeliversAtMostTheCapacity() {
        let received = Locked<[Int]>([])
        let passes = Counter()
        let deliveredInPass = Locked<[Int: Int]>([:])
        let port = LoopPort<Int>(capacity: 4) { value in
            received.withLock { $0.append(value) }
            deliveredInPass.withLock { $0[passes.current, default: 0] += 1 }
        }
        let start = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(port)
            try! loop.add(LoopObserver(activities: .beforeSources, repeats: true) { _, _ in passes.increment() })
            _ = waitUntil { start.isSet }
            ItemsSupport.run(loop) { received.withLock { $0.count } == 100 }
        }
        #expect(port.capacity == 4)
        // The loop's thread is not running it: the ring fills after four, the overflow takes the rest.
        for value in 0..<100 { #expect(port.send(value)) }
        start.set()
        thread.join()
        port.invalidate()
        #expect(received.withLock { $0 } == Array(0..<100))
        // All hundred waited before the first pass: each pass delivers exactly the capacity, the ring's four first,
        // then the overflow's, four at a time.
        let perPass = deliveredInPass.withLock { $0 }
        #expect(perPass.count == 25)
        #expect(perPass.values.allSatisfy { $0 == 4 })
        _ = loop
    }

    @Test func invalidationRefusesLaterSendsAndReleasesTheWaitingMessagesOnce() {
        let releases = Counter()
        let received = Counter()
        let port = LoopPort<Carrying>(capacity: 8) { _ in received.increment() }
        let invalidated = ItemsSupport.Flag()
        let added = ItemsSupport.Flag()
        let (_, thread) = startLoopThread { loop in
            try! loop.add(port)
            try! loop.add(ItemsSupport.keepAlive())
            added.set()
            _ = waitUntil { invalidated.isSet }
            ItemsSupport.run(loop) { releases.current == 21 }
        }
        // In its mode before the invalidation: one that lands during the add leaves the port bound and in no mode, so
        // no cancel handler runs and what waits is released only when the port goes.
        #expect(waitUntil { added.isSet })
        // Twenty messages wait (eight in the ring, twelve in the overflow) when the port is invalidated.
        for _ in 0..<20 { #expect(port.send(Carrying(tracked: Tracked(releases)))) }
        port.invalidate()
        #expect(!port.isValid)
        #expect(!port.send(Carrying(tracked: Tracked(releases))))
        #expect(releases.current == 1)  // The refused message, released at once.
        invalidated.set()
        thread.join()
        #expect(releases.current == 21)  // The twenty, released by the loop's thread, once each.
        #expect(received.current == 0)
    }

    @Test func noHandlerCallStartsOnceAnotherThreadInvalidatesThePort() {
        let releases = Counter()
        let received = Counter()
        let inHandler = ItemsSupport.Flag()
        let invalidated = ItemsSupport.Flag()
        let port = LoopPort<Carrying>(capacity: 16) { _ in
            received.increment()
            inHandler.set()
            _ = waitUntil { invalidated.isSet }  // The invalidation lands while the pass delivers the first of ten.
        }
        for _ in 0..<10 { #expect(port.send(Carrying(tracked: Tracked(releases)))) }
        let (_, thread) = startLoopThread { loop in
            try! loop.add(port)
            try! loop.add(ItemsSupport.keepAlive())
            ItemsSupport.run(loop) { releases.current == 10 }
        }
        #expect(waitUntil { inHandler.isSet })
        port.invalidate()
        invalidated.set()
        thread.join()
        #expect(received.current == 1)
        #expect(releases.current == 10)  // The first after its call; the nine others by the loop's thread, once each.
    }

    @Test func anInvalidationRacingTheAddStillReleasesWhatWaitsOnTheLoopsThread() {
        let releases = Counter()
        let addedRounds = Counter()
        /// Three messages wait; another thread invalidates the port while this one adds it. Whether the invalidation
        /// lands before the add's check (the add throws), during the join or after it, what waits is released: by the
        /// loop's thread while the port lives if the add succeeded, else when the port goes, as documented.
        @Sendable func round(_ loop: Loop) -> Bool {
            let port = LoopPort<Carrying>(capacity: 4) { _ in }
            for _ in 0..<3 { port.send(Carrying(tracked: Tracked(releases))) }
            let before = releases.current
            let ready = ItemsSupport.Flag()
            let go = ItemsSupport.Flag()
            let invalidator = TestThread {
                ready.set()
                while !go.isSet {}  // Spins, so that the invalidation lands within a few hundred ns of the add's start.
                port.invalidate()
            }
            _ = waitUntil { ready.isSet }
            go.set()
            let added = (try? loop.add(port)) != nil
            invalidator.join()
            guard added else { return true }
            addedRounds.increment()
            let deadline = Loop.Instant.now + .seconds(10)
            while releases.current != before + 3 && Loop.Instant.now < deadline {
                loop.run(in: .default, for: .milliseconds(1))
            }
            return releases.current == before + 3
        }
        let failedRounds = Counter()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            for _ in 0..<300 where !round(loop) {
                failedRounds.increment()
                break  // The first is enough: each waited ten seconds.
            }
        }
        #expect(failedRounds.current == 0)
        #expect(addedRounds.current > 0)
        #expect(releases.current == 900)  // Every port has gone: the refused adds' messages too, once each.
    }

    @Test func aLoopThreadThatExitsClosesThePortAndReleasesWhatWaits() {
        let releases = Counter()
        let port = LoopPort<Carrying>(capacity: 4) { _ in }
        let sent = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(port)
            loop.run(in: .default, for: .milliseconds(1))  // Applies the add.
            _ = waitUntil { sent.isSet }
        }
        for _ in 0..<10 { #expect(port.send(Carrying(tracked: Tracked(releases)))) }
        sent.set()
        thread.join()  // Exits without running the loop again: the teardown releases the ten.
        #expect(loop.isTerminated)
        #expect(releases.current == 10)
        #expect(!port.isValid)
        #expect(!port.send(Carrying(tracked: Tracked(releases))))
        #expect(releases.current == 11)
        ItemsSupport.onLoopThread { other in
            do throws(LoopError) {
                try other.add(port)
                Issue.record("a port closed by its loop's exit was added to another loop")
            } catch {
                #expect(error.code == .invalidated)
            }
        }
    }

    @Test func classReferencesInMessagesAreReleasedExactlyOnce() {
        let releases = Counter()
        let received = Counter()
        let port = LoopPort<Carrying>(capacity: 16) { message in
            if message.tracked.releases === releases { received.increment() }
        }
        let (_, thread) = startLoopThread { loop in
            try! loop.add(port)
            ItemsSupport.run(loop) { received.current == 2_000 }
        }
        let senders = (0..<2).map { _ in
            TestThread { for _ in 0..<1_000 { port.send(Carrying(tracked: Tracked(releases))) } }
        }
        for sender in senders { sender.join() }
        thread.join()
        port.invalidate()
        #expect(received.current == 2_000)
        #expect(releases.current == 2_000)
    }

    @Test func aSendWakesASleepingLoop() {
        let received = Counter()
        let port = LoopPort<Int> { _ in
            received.increment()
            Loop.current.stop()
        }
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(port)
            // One long run: a short one could end, and the loop be awake, between the look at `isWaiting` and the send.
            loop.run(in: .default, for: .seconds(60))
        }
        #expect(waitUntil { loop.isWaiting })
        let writesBefore = loop.wakeUpWrites
        #expect(port.send(7))
        #expect(waitUntil { received.current == 1 })
        thread.join()
        port.invalidate()
        #expect(loop.wakeUpWrites - writesBefore == 1)
    }

    @Test func sendsToAnAwakeLoopNeverWriteTheEventFD() {
        let received = Counter()
        let port = LoopPort<Int>(capacity: 16_384) { _ in received.increment() }
        let sendsDone = ItemsSupport.Flag()
        let inBusyBlock = ItemsSupport.Flag()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(port)
            loop.perform {
                // The loop is awake, running this block, until the other thread has sent 10,000 messages.
                inBusyBlock.set()
                _ = waitUntil { sendsDone.isSet }
            }
            ItemsSupport.run(loop) { received.current == 10_000 }
        }
        #expect(waitUntil { inBusyBlock.isSet })
        let writesBefore = loop.wakeUpWrites
        for value in 0..<10_000 { port.send(value) }
        let writesWhileAwake = loop.wakeUpWrites - writesBefore
        sendsDone.set()
        thread.join()
        port.invalidate()
        #expect(writesWhileAwake == 0)
        #expect(received.current == 10_000)
    }

    @Test func aBatchArrivesInOrderWithOneWakeUp() {
        let received = Locked<[Int]>([])
        let port = LoopPort<Int>(capacity: 64) { value in
            let count = received.withLock { list in
                list.append(value)
                return list.count
            }
            if count == 1_000 { Loop.current.stop() }
        }
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(port)
            loop.run(in: .default, for: .seconds(60))  // One sleep until the batch, then passes without one.
        }
        #expect(waitUntil { loop.isWaiting })
        let writesBefore = loop.wakeUpWrites
        #expect(port.send(contentsOf: 0..<1_000) == 1_000)  // Past the ring's 64: the overflow takes the rest.
        thread.join()
        let writes = loop.wakeUpWrites - writesBefore
        port.invalidate()
        #expect(received.withLock { $0 } == Array(0..<1_000))
        #expect(writes == 1)
        #expect(port.send(contentsOf: [1, 2, 3]) == 0)
    }

    @Test func aPortReceivesOnlyInItsModes() {
        let received = Counter()
        let other = Loop.Mode("port-other")
        let port = LoopPort<Int> { _ in received.increment() }
        let (_, thread) = startLoopThread { loop in
            try! loop.add(port, to: other)
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(ItemsSupport.keepAlive(), to: other)
            port.send(1)
            loop.run(in: .default, for: .milliseconds(50))
            #expect(received.current == 0)
            ItemsSupport.run(loop, in: other) { received.current == 1 }
            loop.remove(port, from: other)
        }
        thread.join()
        port.invalidate()
        #expect(received.current == 1)
    }
}
