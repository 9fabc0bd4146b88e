import CRunLoopShims
import Glibc
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKit

/// A host that keeps `pollDescriptor` in an epoll set of its own (CF's run loop does, for the Foundation bridge)
/// while the loop drops a stale entry by rebuilding its epoll set (`ReplacedDescriptorTests`): the host must go on
/// hearing of the loop's work. Before the fix `pollDescriptor` was the loop's set itself, which the rebuild replaced
/// (`dup3` closed it), so the kernel took it out of the host's set and the host waited for good.
@Suite struct HostedRebuildTests {
    @Test func aHostKeepsHearingTheLoopAfterTheLoopRebuildsItsEpollSet() {
        let result = Box<Outcome>()
        let thread = TestThread {
            let loop = Loop.current
            let hostSet = try! Epoll.create()
            defer { close(hostSet) }
            let number = loop.pollDescriptor
            try! Epoll.add(hostSet, number, events: [.input, .edgeTriggered], data: 7)  // As CF adds a port.

            let performed = ItemsSupport.Flag()
            let signalled = LoopSource { _ in performed.set() }
            try! loop.add(signalled)
            let rebuild = Self.rebuild(loop)
            defer { rebuild.cleanUp() }

            let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 4)
            defer { events.deallocate() }
            _ = try! Epoll.wait(hostSet, into: events, timeoutMilliseconds: 0)  // Edges heard before: consumed.
            signalled.signal()  // The loop counts as asleep between host passes: this writes its wake-up eventfd.
            let heard = try! Epoll.wait(hostSet, into: events, timeoutMilliseconds: 5_000)
            let deadlineForPerform = ContinuousClock.now + .seconds(10)
            while !performed.isSet && ContinuousClock.now < deadlineForPerform { loop.runPass() }
            result.value = Outcome(
                rebuilds: loop.descriptorTable.staleEntriesDropped, heard: heard, performed: performed.isSet,
                sameNumber: loop.pollDescriptor == number)
            signalled.invalidate()
        }
        thread.join()
        let outcome = result.value!
        #expect(outcome.rebuilds == 1)
        #expect(outcome.heard == 1, "the host's epoll set no longer reports the loop: it lost pollDescriptor")
        #expect(outcome.performed)
        #expect(outcome.sameNumber, "pollDescriptor changed: a host that kept the number waits on the wrong file")
    }

    /// The old set outlives the rebuild when something else holds it (here a duplicate; in a program, a child forked
    /// before the rebuild), with the stale entry that is always ready. It must leave the host's set before `dup3`
    /// replaces it: afterwards no number names it, and the host would be woken for good.
    @Test func theOldSetKeptOpenElsewhereNoLongerWakesTheHost() {
        let result = Box<(rebuilds: Int, readyWhileIdle: Bool)>()
        let thread = TestThread {
            let loop = Loop.current
            let number = loop.pollDescriptor
            let keepAlive = ItemsSupport.keepAlive()
            try! loop.add(keepAlive)
            let oldSet = dup(loop.poller.epoll)  // The loop's own set as it is before the rebuild.
            defer { close(oldSet) }
            let rebuild = Self.rebuild(loop)
            defer { rebuild.cleanUp() }
            var entry = pollfd(fd: number, events: Int16(POLLIN), revents: 0)
            let readyWhileIdle = poll(&entry, 1, 100) == 1  // Level-triggered: nothing is to be done.
            result.value = (loop.descriptorTable.staleEntriesDropped, readyWhileIdle)
            keepAlive.invalidate()
        }
        thread.join()
        #expect(result.value!.rebuilds == 1)
        #expect(!result.value!.readyWhileIdle, "the host's set still holds the old set, whose stale entry is ready")
    }

    /// A descriptor of the loop's own taken out of its set (as the main queue's eventfd is for a host that serves the
    /// queue itself) stays out after a rebuild: the rebuilt set starts from the loop's own list, not the old set.
    @Test func aDescriptorTheLoopUnregisteredStaysOutOfTheRebuiltSet() {
        let result = Box<(rebuilds: Int, inSetAfter: Bool)>()
        let thread = TestThread {
            let loop = Loop.current
            _ = loop.pollDescriptor
            let ownDescriptor = try! EventFD.create()
            defer { close(ownDescriptor) }
            try! loop.poller.register(ownDescriptor, events: .input, tag: 99)
            loop.poller.unregister(ownDescriptor)
            let rebuild = Self.rebuild(loop)
            defer { rebuild.cleanUp() }
            var event = epoll_event()
            let inSet = epoll_ctl(loop.poller.epoll, EPOLL_CTL_MOD, ownDescriptor, &event) == 0
            result.value = (loop.descriptorTable.staleEntriesDropped, inSet)
        }
        thread.join()
        #expect(result.value!.rebuilds == 1)
        #expect(!result.value!.inSetAfter, "the rebuild put back a descriptor the loop had taken out")
    }

    /// Makes `loop` (the calling thread's, hosted) rebuild its epoll set as `ReplacedDescriptorTests` does: a watched
    /// descriptor is replaced behind its source's back while a duplicate keeps its old file open and readable. Passes
    /// until the rebuild happened (another one, if it rebuilt before) and `runPass()` answers `false`. `cleanUp` closes what it opened.
    static func rebuild(_ loop: Loop) -> (source: FileDescriptorSource, cleanUp: () -> Void) {
        let rebuildsBefore = loop.descriptorTable.staleEntriesDropped
        let stale = makeStaleEntry(loop)
        stale.source.events = [.readable, .writable]  // A change the loop cannot make: it finds the stale entry.
        let deadline = ContinuousClock.now + .seconds(10)
        while loop.descriptorTable.staleEntriesDropped == rebuildsBefore && ContinuousClock.now < deadline {
            loop.runPass()
        }
        while loop.runPass() {}
        return stale
    }

    /// Leaves `loop` (the calling thread's, hosted) an epoll entry it cannot name, ready: a watched descriptor is
    /// replaced behind its source's back while a duplicate keeps its old file open and readable. Changing the
    /// source's events then fails, and the loop finds the stale entry and rebuilds its set. `cleanUp` closes what it
    /// opened.
    static func makeStaleEntry(_ loop: Loop) -> (source: FileDescriptorSource, cleanUp: () -> Void) {
        let replaced = Pipe()
        let other = Pipe()
        let keep = dup(replaced.readEnd)  // Keeps the replaced file open, as a forked child would.
        let watched = try! FileDescriptorSource(descriptor: replaced.readEnd) { _, _ in }
        try! loop.add(watched)
        while loop.runPass() {}
        _ = dup2(other.readEnd, replaced.readEnd)  // The number names the other pipe; the old file lives on.
        replaced.write()  // The old file's entry reports, level-triggered, and nothing can remove it.
        return (
            watched,
            {
                watched.invalidate()
                close(keep)
                replaced.close()
                other.close()
            }
        )
    }

    /// What the loop's thread saw.
    struct Outcome: Sendable {
        let rebuilds: Int
        let heard: Int
        let performed: Bool
        let sameNumber: Bool
    }
}
