import Glibc
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKit

/// A watched descriptor replaced behind the loop's back (`dup2`) while another descriptor (here; another process in
/// a program that forked) keeps its old file open: the kernel keeps that file's epoll entry, which no `epoll_ctl`
/// can name any more. The loop says what happened, drops the entry by rebuilding its epoll set so it stops waking
/// the loop, and leaves every other source alone.
@Suite struct ReplacedDescriptorTests {
    @Test func aReplacedDescriptorIsReportedAsReplacedAndItsOldEntryNoLongerWakesTheLoop() {
        let result = Box<Outcome>()
        let thread = TestThread {
            let loop = Loop.current
            let replaced = Pipe()
            let other = Pipe()
            let keep = dup(replaced.readEnd)  // Keeps the replaced file open, as a forked child would.
            defer {
                close(keep)
                replaced.close()
                other.close()
            }
            let otherCalls = Atomic<Int>(0)
            let first = try! FileDescriptorSource(descriptor: replaced.readEnd) { _, _ in }
            let bystander = try! FileDescriptorSource(descriptor: other.readEnd) { source, _ in
                otherCalls.add(1, ordering: .relaxed)
                other.drain()
            }
            try! loop.add(first)
            try! loop.add(bystander)
            let keepAlive = try! LoopTimer(after: .seconds(3600)) { _ in }
            try! loop.add(keepAlive)
            _ = loop.run(in: .default, for: .zero)

            _ = dup2(other.readEnd, replaced.readEnd)  // The number names the other pipe now; the old file lives on.
            replaced.write()  // The old file is readable: its entry reports, level-triggered.
            first.events = [.readable, .writable]  // The loop's change fails: the number's file is not in the set.
            _ = loop.run(in: .default, for: .zero)

            let passes = Atomic<Int>(0)
            let observer = LoopObserver(activities: .beforeTimers) { _, _ in passes.add(1, ordering: .relaxed) }
            try! loop.add(observer)
            _ = loop.run(in: .default, for: .milliseconds(100))  // Idle: only a report nobody claims could wake it.
            let idlePasses = passes.load(ordering: .relaxed)

            other.write()
            _ = waitUntilRun(loop) { otherCalls.load(ordering: .relaxed) > 0 }
            result.value = Outcome(
                message: first.failure?.message ?? "", firstIsValid: first.isValid, idlePasses: idlePasses,
                bystanderIsValid: bystander.isValid, bystanderCalls: otherCalls.load(ordering: .relaxed),
                rebuilds: loop.descriptorTable.staleEntriesDropped)
            for item: LoopItem in [first, bystander, keepAlive, observer] { item.invalidate() }
        }
        thread.join()
        let outcome = result.value!
        #expect(!outcome.firstIsValid)
        #expect(outcome.message.contains("replaced behind its source's back"), "\(outcome.message)")
        #expect(!outcome.message.contains("was closed"), "\(outcome.message)")
        #expect(outcome.rebuilds == 1)
        #expect(outcome.idlePasses < 20, "passes in an idle 100 ms: the stale entry keeps waking the loop")
        #expect(outcome.bystanderIsValid)
        #expect(outcome.bystanderCalls > 0)
    }

    /// What the loop's thread saw.
    struct Outcome: Sendable {
        let message: String
        let firstIsValid: Bool
        let idlePasses: Int
        let bystanderIsValid: Bool
        let bystanderCalls: Int
        let rebuilds: Int
    }

    /// Runs `loop` in short slices until `condition` holds or ten seconds pass; answers whether it held.
    private func waitUntilRun(_ loop: Loop, _ condition: () -> Bool) -> Bool {
        let deadline = Loop.Instant.now + .seconds(10)
        while !condition() && Loop.Instant.now < deadline { _ = loop.run(in: .default, for: .milliseconds(10)) }
        return condition()
    }
}
