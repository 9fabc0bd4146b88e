import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// CommitBeforeSleep: coalescing, order, commit at beforeWaiting and exit, cross-thread marks, invalidation.
@Suite struct CommitBeforeSleepTests {
    @Test func aThousandMarksInOnePassGiveOneCommitAtBeforeWaiting() {
        let commits = Recorder<[Int]>()
        let activities = Recorder<String>()
        let result = Box<Loop.RunResult>()
        onFreshLoop { loop in
            let lastActivity = trackActivity(of: loop)
            let committer = try! CommitBeforeSleep<Int>(loop: loop) { updates in
                commits.append(updates)
                activities.append(lastActivity.value.map(name) ?? "none")
                loop.stop()
            }
            let source = LoopSource { _ in
                for update in 0..<1_000 { committer.mark(update) }
            }
            try! loop.add(source)
            source.signal()
            result.value = loop.run(in: .default, for: .seconds(10))
            source.invalidate()
        }
        #expect(commits.all == [Array(0..<1_000)])
        #expect(activities.all == ["beforeWaiting"])
        #expect(result.value == .stopped)
    }

    @Test func marksMadeDuringACommitGoToTheNextCommit() {
        let commits = Recorder<[String]>()
        let result = Box<Loop.RunResult>()
        onFreshLoop { loop in
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive)
            let box = Box<CommitBeforeSleep<String>>()
            let committer = try! CommitBeforeSleep<String>(loop: loop) { updates in
                commits.append(updates)
                if commits.count == 1 {
                    box.value?.mark("late")
                } else {
                    loop.stop()
                }
            }
            box.value = committer
            committer.mark("a")
            committer.mark("b")
            // Nothing else happens: the second commit must come without any outside wake-up.
            result.value = loop.run(in: .default, for: .seconds(10))
            keepAlive.invalidate()
        }
        #expect(commits.all == [["a", "b"], ["late"]])
        #expect(result.value == .stopped)
    }

    @Test func marksFromAnotherThreadAreCommittedOnTheLoopThreadInOrder() {
        let commits = Recorder<[Int]>()
        let onLoopThread = Recorder<Bool>()
        let committerBox = Box<CommitBeforeSleep<Int>>()
        let result = Box<Loop.RunResult>()
        let (loop, thread) = startLoopThread { loop in
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive)
            committerBox.value = try! CommitBeforeSleep<Int>(loop: loop) { updates in
                commits.append(updates)
                onLoopThread.append(loop.isCurrent)
            }
            result.value = loop.run(in: .default, for: .seconds(20))
            keepAlive.invalidate()
        }
        #expect(waitUntil { committerBox.value != nil && loop.isWaiting })
        for update in 0..<200 { committerBox.value?.mark(update) }
        #expect(waitUntil { commits.all.joined().count == 200 })
        loop.stop()
        thread.join()
        #expect(Array(commits.all.joined()) == Array(0..<200))
        #expect(onLoopThread.all.allSatisfy { $0 })
        #expect(result.value == .stopped)
    }

    @Test func aMarkFromAnotherThreadKeepsAnOtherwiseEmptyModeRunningUntilCommitted() {
        let commits = Recorder<[Int]>()
        let committerBox = Box<CommitBeforeSleep<Int>>()
        let marked = Atomic<Bool>(false)
        let result = Box<Loop.RunResult>()
        let elapsed = Box<Duration>()
        let (_, thread) = startLoopThread { loop in
            committerBox.value = try! CommitBeforeSleep<Int>(loop: loop) { commits.append($0) }
            _ = waitUntil { marked.load(ordering: .acquiring) }
            let start = Loop.Instant.now
            result.value = loop.run(in: .default, for: .seconds(10))
            elapsed.value = Loop.Instant.now - start
        }
        #expect(waitUntil { committerBox.value != nil })
        committerBox.value?.mark(7)
        marked.store(true, ordering: .releasing)
        thread.join()
        #expect(commits.all == [[7]])
        #expect(result.value == .finished)
        #expect((elapsed.value ?? .seconds(99)) < .seconds(5))
    }

    @Test func theCommitRunsAfterBeforeWaitingObserversOfLowerOrder() {
        let log = Recorder<String>()
        let commits = Recorder<[String]>()
        onFreshLoop { loop in
            let box = Box<CommitBeforeSleep<String>>()
            let early = LoopObserver(activities: .beforeWaiting, order: 0) { _, _ in log.append("order 0") }
            let late = LoopObserver(activities: .beforeWaiting, order: Int.max - 2000) { _, _ in
                log.append("order max-2000")
                box.value?.mark("from the max-2000 observer")
            }
            let last = LoopObserver(activities: .beforeWaiting, order: Int.max) { _, _ in
                log.append("order max")
                loop.stop()
            }
            // Added in scrambled order: the loop sorts observers by order.
            try! loop.add(last)
            let committer = try! CommitBeforeSleep<String>(loop: loop) { updates in
                log.append("commit")
                commits.append(updates)
            }
            box.value = committer
            try! loop.add(late)
            try! loop.add(early)
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive)
            loop.run(in: .default, for: .seconds(10))
            keepAlive.invalidate()
        }
        #expect(log.all == ["order 0", "order max-2000", "commit", "order max"])
        #expect(commits.all == [["from the max-2000 observer"]])
    }

    @Test func pendingUpdatesAreCommittedWhenTheRunExits() {
        let commits = Recorder<[Int]>()
        let activities = Recorder<String>()
        onFreshLoop { loop in
            let lastActivity = trackActivity(of: loop)
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive)
            let committer = try! CommitBeforeSleep<Int>(loop: loop) { updates in
                commits.append(updates)
                activities.append(lastActivity.value.map(name) ?? "none")
            }
            committer.mark(1)
            committer.mark(2)
            // A zero duration polls once: no beforeWaiting, so only the exit can commit.
            loop.run(in: .default, for: .zero)
            keepAlive.invalidate()
        }
        #expect(commits.all == [[1, 2]])
        #expect(activities.all == ["exit"])
    }

    @Test func passesWithoutMarksDoNotCommit() {
        let commits = Counter()
        let fires = Counter()
        onFreshLoop { loop in
            let committer = try! CommitBeforeSleep<Int>(loop: loop) { _ in commits.increment() }
            let timer = try! LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
                if fires.increment() == 5 { timer.invalidate() }
            }
            try! loop.add(timer)
            loop.run(in: .default, for: .seconds(10))
            committer.invalidate()
        }
        #expect(fires.current == 5)
        #expect(commits.current == 0)
    }

    @Test func invalidateDropsPendingUpdatesAndLaterMarks() {
        let commits = Recorder<[Int]>()
        let state = Box<[Int]>()
        onFreshLoop { loop in
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive)
            let committer = try! CommitBeforeSleep<Int>(loop: loop) { commits.append($0) }
            committer.mark(1)
            committer.invalidate()
            committer.mark(2)
            state.value = [committer.isValid ? 1 : 0, committer.pendingCount]
            loop.run(in: .default, for: .zero)
            keepAlive.invalidate()
        }
        #expect(commits.all.isEmpty)
        #expect(state.value == [0, 0])
    }

    @Test func commitsOnlyInItsModes() {
        let commits = Recorder<[String]>()
        onFreshLoop { loop in
            let keepAlive = LoopSource { _ in }
            try! loop.add(keepAlive, to: .common)
            try! loop.add(keepAlive, to: "private")
            let committer = try! CommitBeforeSleep<String>(loop: loop, modes: [.default]) { commits.append($0) }
            committer.mark("x")
            loop.run(in: "private", for: .zero)
            committer.mark("y")
            loop.run(in: .default, for: .zero)
            keepAlive.invalidate()
        }
        #expect(commits.all == [["x", "y"]])
    }
}

// MARK: Support

/// Runs `body` with a fresh thread's loop and waits for the thread to end.
private func onFreshLoop(_ body: @escaping @Sendable (Loop) -> Void) {
    let (_, thread) = startLoopThread(body)
    thread.join()
}

/// Adds an observer of every activity, ordered first, that remembers the latest one.
private func trackActivity(of loop: Loop) -> Box<Loop.Activity> {
    let last = Box<Loop.Activity>()
    try! loop.add(LoopObserver(activities: .all, order: .min) { _, activity in last.value = activity })
    return last
}

private func name(_ activity: Loop.Activity) -> String {
    switch activity {
    case .entry: "entry"
    case .beforeTimers: "beforeTimers"
    case .beforeSources: "beforeSources"
    case .beforeWaiting: "beforeWaiting"
    case .afterWaiting: "afterWaiting"
    case .exit: "exit"
    default: "\(activity)"
    }
}
