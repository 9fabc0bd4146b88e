import Foundation
import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

@testable import RunLoopKitServices

/// Child-exit sources: statuses, a child that exited first, many children at once, invalidation, refusals, reaping.
///
/// Serialized: the tests count this process's pidfds, which only this suite opens.
@Suite(.serialized) struct ChildExitSourceTests {
    /// One handler call, as recorded.
    struct Report: Sendable, Equatable {
        let pid: pid_t
        let status: ChildExitStatus
        let onLoopThread: Bool
        let sourceWasValid: Bool
    }

    /// Adds a source for `pid` to a fresh loop thread and runs it until the handler was called; answers the reports.
    private func reports(for pid: pid_t, timeout: Duration = .seconds(10)) -> [Report] {
        let recorder = Recorder<Report>()
        ItemsSupport.onLoopThread { loop in
            let source = try! ChildExitSource(pid: pid) { source, status in
                recorder.append(
                    Report(
                        pid: source.pid, status: status, onLoopThread: Loop.current === loop,
                        sourceWasValid: source.isValid))
            }
            try! loop.add(source)
            ItemsSupport.run(loop, timeout: timeout) { recorder.count > 0 }
            loop.run(in: .default, for: .milliseconds(20))  // A second call would show here.
        }
        return recorder.all
    }

    @Test func anExitCodeIsReportedOnceOnTheLoopThreadAndTheChildIsReaped() {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        let pid = ChildProcess.exiting(with: 3)
        let reports = reports(for: pid)
        #expect(
            reports == [Report(pid: pid, status: .exited(code: 3), onLoopThread: true, sourceWasValid: false)])
        #expect(ChildProcess.isReaped(pid))
        #expect(waitUntil { ChildProcess.openPidfdCount() == pidfdsBefore })
    }

    @Test func aKilledChildReportsItsSignal() {
        let status = Box<ChildExitStatus>()
        let pid = ChildProcess.sleeping()
        let running = ItemsSupport.startRunningLoop { loop in
            try! loop.add(try! ChildExitSource(pid: pid) { _, exit in status.value = exit })
        }
        #expect(waitUntil { running.loop.isWaiting })
        kill(pid, SIGKILL)
        #expect(waitUntil { status.value != nil })
        running.finish()
        #expect(status.value == .signalled(signal: SIGKILL, coreDumped: false))
        #expect(ChildExitStatus.signalled(signal: SIGKILL, coreDumped: false).description == "signalled(SIGKILL)")
        #expect(ChildProcess.isReaped(pid))
    }

    @Test func aChildThatExitedBeforeTheSourceWasCreatedStillFires() {
        let pid = ChildProcess.exiting(with: 7)
        ChildProcess.waitForExitWithoutReaping(pid)
        #expect(reports(for: pid).map(\.status) == [.exited(code: 7)])
        #expect(ChildProcess.isReaped(pid))
    }

    @Test func aChildThatExitsWhileTheSourceIsInNoRunningModeFiresWhenItsModeRuns() {
        let pid = ChildProcess.exiting(with: 4)
        let statuses = Recorder<ChildExitStatus>()
        ItemsSupport.onLoopThread { loop in
            let source = try! ChildExitSource(pid: pid) { _, status in statuses.append(status) }
            try! loop.add(source, to: Loop.Mode("Other"))
            #expect(loop.contains(source, in: Loop.Mode("Other")))
            ChildProcess.waitForExitWithoutReaping(pid)
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .milliseconds(50))
            #expect(statuses.count == 0)
            ItemsSupport.run(loop, in: Loop.Mode("Other"), timeout: .seconds(10)) { statuses.count > 0 }
            #expect(!loop.contains(source, in: Loop.Mode("Other")))
        }
        #expect(statuses.all == [.exited(code: 4)])
    }

    @Test func aHundredChildrenInParallelAreEachReportedOnceWithTheirStatus() {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        let descriptorsBefore = openDescriptorCount()
        var expected: [pid_t: ChildExitStatus] = [:]
        for index in 0..<100 {
            if index % 2 == 0 {
                expected[ChildProcess.spawn(["/bin/true"])] = .exited(code: 0)
            } else {
                let code = index % 50 + 1
                expected[ChildProcess.exiting(with: code)] = .exited(code: CInt(code))
            }
        }
        let recorder = Recorder<(pid_t, ChildExitStatus)>()
        let pids = Array(expected.keys)
        ItemsSupport.onLoopThread { loop in
            for pid in pids {
                try! loop.add(
                    try! ChildExitSource(pid: pid) { source, status in recorder.append((source.pid, status)) })
            }
            ItemsSupport.run(loop, timeout: .seconds(30)) { recorder.count >= 100 }
            loop.run(in: .default, for: .milliseconds(20))
        }
        let reports = recorder.all
        #expect(reports.count == 100)
        #expect(Set(reports.map(\.0)) == Set(pids))
        for (pid, status) in reports { #expect(expected[pid] == status, "pid \(pid)") }
        #expect(pids.allSatisfy(ChildProcess.isReaped))
        #expect(waitUntil { ChildProcess.openPidfdCount() == pidfdsBefore })
        #expect(waitUntil { openDescriptorCount() <= descriptorsBefore })
    }

    @Test func invalidatingBeforeTheExitOnTheLoopThreadClosesThePidfdAndNeverCallsTheHandler() {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        let calls = Counter()
        let pid = ChildProcess.sleeping()
        ItemsSupport.onLoopThread { loop in
            let source = try! ChildExitSource(pid: pid) { _, _ in calls.increment() }
            try! loop.add(source)
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .milliseconds(10))
            #expect(ChildProcess.openPidfdCount() == pidfdsBefore + 1)
            source.invalidate()
            #expect(!source.isValid)
            #expect(ChildProcess.openPidfdCount() == pidfdsBefore)
            kill(pid, SIGKILL)
            ChildProcess.waitForExitWithoutReaping(pid)
            loop.run(in: .default, for: .milliseconds(50))
            #expect {
                try loop.add(source)
            } throws: {
                ($0 as? LoopError)?.code == .invalidated
            }
        }
        #expect(calls.current == 0)
        #expect(!ChildProcess.isReaped(pid))  // Invalidation leaves the child to its owner.
        ChildProcess.killAndReap(pid)
    }

    @Test func invalidatingFromAnotherThreadClosesThePidfdAndNeverCallsTheHandler() {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        let calls = Counter()
        let pid = ChildProcess.sleeping()
        let sourceBox = Box<ChildExitSource>()
        let running = ItemsSupport.startRunningLoop { loop in
            let source = try! ChildExitSource(pid: pid) { _, _ in calls.increment() }
            try! loop.add(source)
            sourceBox.value = source
        }
        #expect(waitUntil { running.loop.isWaiting })
        #expect(ChildProcess.openPidfdCount() == pidfdsBefore + 1)
        sourceBox.value?.invalidate()
        #expect(waitUntil { ChildProcess.openPidfdCount() == pidfdsBefore })
        ChildProcess.killAndReap(pid)
        running.finish()
        #expect(calls.current == 0)
    }

    @Test func anUnscheduledSourceClosesItsPidfdWhenInvalidatedOrReleased() throws {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        let pid = ChildProcess.sleeping()
        defer { ChildProcess.killAndReap(pid) }
        let first = try ChildExitSource(pid: pid) { _, _ in }
        #expect(ChildProcess.openPidfdCount() == pidfdsBefore + 1)
        first.invalidate()
        #expect(ChildProcess.openPidfdCount() == pidfdsBefore)
        do {
            _ = try ChildExitSource(pid: pid) { _, _ in }
        }
        #expect(ChildProcess.openPidfdCount() == pidfdsBefore)
    }

    @Test func aLoopKeepsAScheduledSourceItsCallerDroppedAndTheHandlerCanReachIt() {
        let pid = ChildProcess.exiting(with: 9)
        let reached = Recorder<pid_t>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(try! ChildExitSource(pid: pid) { source, _ in reached.append(source.pid) })
            ItemsSupport.run(loop, timeout: .seconds(10)) { reached.count > 0 }
        }
        #expect(reached.all == [pid])
    }

    /// As every item (CF's rule): when its loop's thread exits first, the source leaves that loop but stays valid,
    /// keeps its pidfd, and fires in the loop it joins next.
    @Test func aSourceWhoseLoopThreadExitedFirstStaysValidAndFiresInTheNextLoop() {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        let pid = ChildProcess.sleeping()
        let sourceBox = Box<ChildExitSource>()
        let reported = Recorder<ChildExitStatus>()
        ItemsSupport.onLoopThread { loop in
            let source = try! ChildExitSource(pid: pid) { _, status in reported.append(status) }
            try! loop.add(source)
            sourceBox.value = source
        }
        #expect(sourceBox.value?.isValid == true)
        #expect(ChildProcess.openPidfdCount() == pidfdsBefore + 1)
        #expect(!ChildProcess.isReaped(pid))
        kill(pid, SIGKILL)
        ItemsSupport.onLoopThread { loop in
            try! loop.add(sourceBox.value!)
            loop.run(in: .default, for: .seconds(30))  // Finishes once the source fired and left its mode.
        }
        #expect(reported.all == [.signalled(signal: SIGKILL, coreDumped: false)])
        #expect(ChildProcess.isReaped(pid))
        #expect(waitUntil { ChildProcess.openPidfdCount() == pidfdsBefore })
    }

    @Test func aChildReapedElsewhereIsReportedAsSuch() {
        let pid = ChildProcess.exiting(with: 5)
        let statuses = Recorder<ChildExitStatus>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(try! ChildExitSource(pid: pid) { _, status in statuses.append(status) })
            ChildProcess.waitForExitWithoutReaping(pid)
            var status: CInt = 0
            #expect(waitpid(pid, &status, 0) == pid)  // Someone else reaps it first.
            ItemsSupport.run(loop, timeout: .seconds(10)) { statuses.count > 0 }
        }
        #expect(statuses.all == [.reapedElsewhere])
    }

    @Test func aProcessThatIsNotOurChildIsRefused() {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        #expect {
            _ = try ChildExitSource(pid: getppid()) { _, _ in }
        } throws: { error in
            let error = error as? LoopError
            return error?.code == .invalidArgument && error?.errno == ECHILD
        }
        #expect(ChildProcess.openPidfdCount() == pidfdsBefore)
    }

    @Test func badPidsAreRefused() {
        for pid: pid_t in [0, -1, -getpid()] {
            #expect {
                _ = try ChildExitSource(pid: pid) { _, _ in }
            } throws: { ($0 as? LoopError)?.code == .invalidArgument }
        }
        let reaped = ChildProcess.exiting(with: 0)
        ChildProcess.killAndReap(reaped)
        #expect {
            _ = try ChildExitSource(pid: reaped) { _, _ in }
        } throws: { error in
            let error = error as? LoopError
            return error?.code == .invalidArgument && (error?.errno == ESRCH || error?.errno == ECHILD)
        }
    }

    @Test func addingToASecondLoopIsRefusedAndAFailedAddLeaksNothing() {
        let pidfdsBefore = ChildProcess.openPidfdCount()
        let pid = ChildProcess.sleeping()
        defer { ChildProcess.killAndReap(pid) }
        let (deadLoop, deadThread) = startLoopThread { _ in }
        deadThread.join()
        do {
            let source = try! ChildExitSource(pid: pid) { _, _ in }
            #expect {
                try deadLoop.add(source)
            } throws: {
                ($0 as? LoopError)?.code == .loopTerminated
            }
            #expect(source.isValid)
        }
        #expect(ChildProcess.openPidfdCount() == pidfdsBefore)  // A failed add left no cycle holding the pidfd.

        let sourceBox = Box<ChildExitSource>()
        let running = ItemsSupport.startRunningLoop { loop in
            let source = try! ChildExitSource(pid: pid) { _, _ in }
            try! loop.add(source)
            sourceBox.value = source
        }
        ItemsSupport.onLoopThread { other in
            #expect {
                try other.add(sourceBox.value!)
            } throws: {
                ($0 as? LoopError)?.code == .ownedByAnotherLoop
            }
        }
        #expect(sourceBox.value?.isValid == true)
        sourceBox.value?.invalidate()
        #expect(waitUntil { ChildProcess.openPidfdCount() == pidfdsBefore })
        running.finish()
    }

    @Test func theDocsExampleRunsUntilTheChildIsReported() {
        let output = Recorder<String>()
        let result = Box<Loop.RunResult>()
        ItemsSupport.onLoopThread { _ in
            // Docs/ChildProcesses.md's example, with print replaced by a recorder.
            var pid: pid_t = 0
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup("exit 3"), nil]
            defer { argv.forEach { free($0) } }
            guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return }
            let spawned = pid
            let loop = Loop.current
            let watch = try! ChildExitSource(pid: pid) { source, status in
                output.append("child \(source.pid == spawned): \(status)")
            }
            try! loop.add(watch)
            result.value = loop.run(in: .default, for: .seconds(10))
        }
        #expect(output.all == ["child true: exited(3)"])
        #expect(result.value == .finished)
    }

    @Test func theLoopKeepsAnUnheldSourceUntilItFiresAndThenFreesIt() {
        let pid = ChildProcess.sleeping()
        let reported = Counter()
        let keptWhileWaiting = Box<Bool>()
        let freedAfterFiring = Box<Bool>()
        ItemsSupport.onLoopThread { loop in
            weak var weakSource: ChildExitSource?
            do {
                let source = try! ChildExitSource(pid: pid) { _, _ in reported.increment() }
                weakSource = source
                try! loop.add(source)
            }
            try! loop.add(ItemsSupport.keepAlive())
            loop.run(in: .default, for: .milliseconds(10))
            keptWhileWaiting.value = weakSource != nil
            kill(pid, SIGKILL)
            freedAfterFiring.value = ItemsSupport.run(loop, timeout: .seconds(10)) {
                reported.current == 1 && weakSource == nil
            }
        }
        #expect(keptWhileWaiting.value == true)
        #expect(freedAfterFiring.value == true)  // No reference cycle outlives the firing.
        #expect(ChildProcess.isReaped(pid))
    }
}
