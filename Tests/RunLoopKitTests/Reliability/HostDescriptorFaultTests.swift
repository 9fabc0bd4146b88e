import Glibc
import RunLoopKitSystem
import Testing

@testable import RunLoopKit

/// `pollDescriptor` is an epoll set made when a host first asks for it, so making it can fail (`EMFILE`). Scripted
/// faults are process-wide: each scenario runs in a child process of its own.
@Suite struct HostDescriptorFaultTests {
    /// The bridges' path: a typed error, nothing left open, and the next call makes the set.
    @Test func makingTheHostSetWithNoDescriptorLeftThrowsAndALaterCallWorks() async {
        await #expect(processExitsWith: .success) {
            TestThread {
                let loop = Loop.current
                startDispatchManager()
                let before = openDescriptorCount()
                let (code, _) = FaultInjection.with([.init("epoll_create1", EMFILE)]) { () -> LoopError.Code? in
                    do throws(LoopError) {
                        _ = try loop.makePollDescriptor()
                        return nil
                    } catch {
                        return error.errno == EMFILE ? error.code : nil
                    }
                }
                guard code == .systemCallFailed, openDescriptorCount() == before else { exit(1) }
                guard loop.pollDescriptor >= 0, openDescriptorCount() == before + 1 else { exit(2) }
            }.join()
            exit(0)
        }
    }

    /// A rebuild whose re-add of the loop's set to the host's set fails (`ENOMEM`) keeps the temporary number under
    /// which the host's set holds the new set, so the host still hears the loop; the next rebuild lets it go (one
    /// descriptor more between the two, none after) and the host still hears the loop.
    @Test func aRebuildWhoseReAddToTheHostSetFailsKeepsTheHostHearing() async {
        await #expect(processExitsWith: .success) {
            TestThread {
                let loop = Loop.current
                let number = loop.pollDescriptor
                let performs = Counter()
                let signalled = LoopSource { _ in performs.increment() }
                try! loop.add(signalled)
                while loop.runPass() {}
                startDispatchManager()
                let before = openDescriptorCount()
                let reAdd = FaultInjection.Fault("epoll_ctl(EPOLL_CTL_ADD)", ENOMEM, on: loop.poller.epoll)
                let (first, counts) = FaultInjection.with([reAdd]) { HostedRebuildTests.rebuild(loop) }
                guard counts == [1], loop.descriptorTable.staleEntriesDropped == 1 else { exit(1) }
                let spare = loop.poller.withRegistrations { $0.hostEntry } ?? -1
                guard spare >= 0, spare != loop.poller.epoll else { exit(2) }  // Kept, as the host set's key.
                guard Self.hears(loop, number, signalled, performs, expected: 1) else { exit(3) }
                let second = HostedRebuildTests.rebuild(loop)
                guard loop.descriptorTable.staleEntriesDropped == 2 else { exit(4) }
                guard loop.poller.withRegistrations({ $0.hostEntry }) == loop.poller.epoll else { exit(5) }
                guard Self.hears(loop, number, signalled, performs, expected: 2) else { exit(6) }
                first.cleanUp()
                second.cleanUp()
                guard openDescriptorCount() == before else { exit(7) }  // The spare was closed.
                signalled.invalidate()
            }.join()
            exit(0)
        }
    }

    /// Whether `number` (polled as a host does) becomes readable after `source` is signalled, and the loop then
    /// performs it (`performs` reaching `expected`).
    private static func hears(
        _ loop: Loop, _ number: CInt, _ source: LoopSource, _ performs: Counter, expected: Int
    ) -> Bool {
        while loop.runPass() {}
        source.signal()
        var entry = pollfd(fd: number, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 5_000) == 1 else { return false }
        let deadline = ContinuousClock.now + .seconds(10)
        while performs.current < expected && ContinuousClock.now < deadline { loop.runPass() }
        return performs.current == expected
    }

    /// The public getter cannot throw: it traps, naming the reason, as `Loop.current` does.
    @Test func pollDescriptorWithNoDescriptorLeftTrapsWithTheReason() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            TestThread {
                let loop = Loop.current
                FaultInjection.install([.init("epoll_create1", EMFILE)])
                _ = loop.pollDescriptor
            }.join()
            exit(0)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("pollDescriptor cannot make the host's epoll set"), "\(message)")
    }
}
