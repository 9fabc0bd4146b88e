import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Custom sources: signalling, coalescing, ordering, schedule/cancel handlers, invalidation and ownership.
@Suite struct LoopSourceTests {
    @Test func signalFromAnotherThreadWakesTheLoopAndPerformsOnItsThread() {
        let onLoopThread = Recorder<Bool>()
        let sourceBox = Box<LoopSource>()
        let result = Box<Loop.RunResult>()
        let (loop, thread) = startLoopThread { loop in
            let source = LoopSource { _ in
                onLoopThread.append(Loop.current === loop)
                loop.stop()
            }
            try! loop.add(source)
            sourceBox.value = source
            result.value = loop.run(in: .default, for: .seconds(10))
        }
        #expect(waitUntil { sourceBox.value != nil && loop.isWaiting })
        sourceBox.value?.signal()
        thread.join()
        #expect(onLoopThread.all == [true])
        #expect(result.value == .stopped)
    }

    @Test func signalsBeforeAPassCoalesceIntoOnePerform() {
        let performed = Counter()
        let counts = Recorder<Int>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in performed.increment() }
            try! loop.add(source)
            for _ in 0..<100 { source.signal() }
            let other = TestThread { for _ in 0..<100 { source.signal() } }
            other.join()
            counts.append(source.isSignalled ? 1 : 0)
            loop.run(in: .default, for: .zero)
            counts.append(performed.current)
            loop.run(in: .default, for: .zero)
            counts.append(performed.current)
        }
        #expect(counts.all == [1, 1, 1])
    }

    @Test func signalsFromFourThreadsAreEachFollowedByAPerform() {
        let threads = 4
        let signalsPerThread = 10_000
        let issued = Atomic<Int>(0)
        let maxSeen = Atomic<Int>(0)
        let performs = Counter()
        let sourceBox = Box<LoopSource>()
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(60)) { loop in
            let source = LoopSource { _ in
                performs.increment()
                // The loop cleared the signalled flag before this call: every signal counted so far is covered.
                let seen = issued.load(ordering: .sequentiallyConsistent)
                var current = maxSeen.load(ordering: .relaxed)
                while current < seen {
                    let (exchanged, original) = maxSeen.compareExchange(
                        expected: current, desired: seen, ordering: .sequentiallyConsistent)
                    if exchanged { break }
                    current = original
                }
            }
            try! loop.add(source)
            sourceBox.value = source
        }
        #expect(waitUntil { sourceBox.value != nil })
        let source = sourceBox.value!
        let stranded = Counter()
        let signallers = (0..<threads).map { _ in
            TestThread {
                for index in 0..<signalsPerThread {
                    // Counted before signalling: a perform that clears the flag after this signal set it must
                    // see the count (counting after could miss it, and no later perform would come).
                    let number = issued.add(1, ordering: .sequentiallyConsistent).newValue
                    source.signal()
                    // Every 100th signal waits for a perform that saw it (exercises sleep and wake-up).
                    if index % 100 == 99 && stranded.current == 0 {
                        let covered = waitUntil(timeout: .seconds(5)) {
                            maxSeen.load(ordering: .sequentiallyConsistent) >= number
                        }
                        if !covered { stranded.increment() }  // Later waits are skipped: fail fast.
                    }
                }
            }
        }
        for signaller in signallers { signaller.join() }
        let total = threads * signalsPerThread
        #expect(waitUntil { maxSeen.load(ordering: .sequentiallyConsistent) == total })
        #expect(waitUntil { !source.isSignalled })
        running.finish()
        #expect(stranded.current == 0)
        #expect(performs.current >= 1)
        #expect(performs.current <= total)
    }

    @Test func lowerOrderFirstThenSignalOrder() {
        let recorder = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let sources: [(String, Int)] = [("a1", 1), ("b0", 0), ("c1", 1), ("d0", 0)]
            var made: [String: LoopSource] = [:]
            for (name, order) in sources {
                let source = LoopSource(order: order) { _ in recorder.append(name) }
                try! loop.add(source)
                made[name] = source
            }
            for name in ["c1", "d0", "a1", "b0"] { made[name]!.signal() }
            loop.run(in: .default, for: .zero)
        }
        #expect(recorder.all == ["d0", "b0", "c1", "a1"])
    }

    @Test func returnAfterSourceHandledPerformsOneAndLeavesTheRestSignalled() {
        let recorder = Recorder<String>()
        let results = Recorder<Loop.RunResult>()
        let stillSignalled = Recorder<[Bool]>()
        ItemsSupport.onLoopThread { loop in
            let a = LoopSource(order: 0) { _ in recorder.append("a") }
            let b = LoopSource(order: 1) { _ in recorder.append("b") }
            let c = LoopSource(order: 2) { _ in recorder.append("c") }
            for source in [a, b, c] {
                try! loop.add(source)
                source.signal()
            }
            results.append(loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true))
            stillSignalled.append([a.isSignalled, b.isSignalled, c.isSignalled])
            results.append(loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true))
            stillSignalled.append([a.isSignalled, b.isSignalled, c.isSignalled])
        }
        #expect(results.all == [.handledSource, .handledSource])
        #expect(recorder.all == ["a", "b"])
        #expect(stillSignalled.all == [[false, true, true], [false, false, true]])
    }

    @Test func sourceSignalledInItsOwnPerformRunsInALaterPass() {
        let events = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let performed = Counter()
            let box = Box<LoopSource>()
            let source = LoopSource { _ in
                events.append("perform")
                if performed.increment() == 1 { box.value?.signal() }
            }
            box.value = source
            let observer = LoopObserver(activities: .beforeSources) { _, _ in events.append("pass") }
            try! loop.add(observer)
            try! loop.add(source)
            source.signal()
            ItemsSupport.run(loop, timeout: .seconds(5)) { performed.current >= 2 }
            source.invalidate()
        }
        let all = events.all
        let performs = all.indices.filter { all[$0] == "perform" }
        #expect(performs.count == 2)
        if performs.count == 2 {
            #expect(all[performs[0]..<performs[1]].contains("pass"))
        }
    }

    @Test func scheduleHandlerRunsOncePerModeJoinedOnTheLoopThread() {
        let calls = Recorder<String>()
        let running = ItemsSupport.startRunningLoop()
        let loop = running.loop
        let source = LoopSource(
            schedule: { scheduled, mode in
                calls.append("\(mode.name) \(scheduled === loop) \(scheduled.isCurrent)")
            }, perform: { _ in })
        // Added from the test thread: the handler still runs on the loop's thread.
        try! loop.add(source, to: "a")
        try! loop.add(source, to: "b")
        try! loop.add(source, to: "a")  // Already there: no call.
        #expect(waitUntil { calls.count >= 2 })
        running.finish()
        #expect(calls.all.sorted() == ["a true true", "b true true"])
    }

    @Test func scheduleHandlerRunsForEachCommonMode() {
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            loop.addCommonMode("extra")
            let source = LoopSource(schedule: { _, mode in calls.append(mode.name) }, perform: { _ in })
            try! loop.add(source, to: .common)
            try! loop.add(source, to: .common)
        }
        #expect(calls.all.sorted() == ["extra", Loop.Mode.default.name].sorted())
    }

    @Test func cancelHandlerRunsOnRemoveAndOncePerModeOnInvalidate() {
        let calls = Recorder<String>()
        let threadChecks = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource(
                cancel: { cancelled, mode in
                    calls.append(mode.name)
                    threadChecks.append(cancelled === loop && cancelled.isCurrent)
                }, perform: { _ in })
            for mode: Loop.Mode in ["a", "b", "c"] { try! loop.add(source, to: mode) }
            loop.remove(source, from: "a")
            calls.append("removed")
            loop.remove(source, from: "a")  // Not there any more: no call.
            source.invalidate()
            source.invalidate()  // Already invalid: no call.
        }
        let all = calls.all
        #expect(all.first == "a")
        #expect(all.count == 4)
        #expect(all.dropFirst(2).sorted() == ["b", "c"])
        #expect(threadChecks.all.allSatisfy { $0 })
    }

    @Test func cancelHandlersRunOnTheLoopThreadWhenInvalidatedFromAnotherThread() {
        let calls = Recorder<String>()
        let sourceBox = Box<LoopSource>()
        let running = ItemsSupport.startRunningLoop { loop in
            let source = LoopSource(
                cancel: { cancelled, mode in
                    calls.append("\(mode.name) \(cancelled.isCurrent)")
                }, perform: { _ in })
            try! loop.add(source, to: .default)
            try! loop.add(source, to: "other")
            sourceBox.value = source
        }
        #expect(waitUntil { running.loop.isWaiting })
        sourceBox.value?.invalidate()
        #expect(waitUntil { calls.count == 2 })
        running.finish()
        #expect(calls.all.sorted() == ["default true", "other true"])
    }

    @Test func sourceInvalidatedInItsOwnPerformIsNeverPerformedAgain() {
        let performed = Counter()
        let cancels = Counter()
        ItemsSupport.onLoopThread { loop in
            let box = Box<LoopSource>()
            let source = LoopSource(
                cancel: { _, _ in cancels.increment() },
                perform: { _ in
                    performed.increment()
                    box.value?.invalidate()
                    box.value?.signal()  // Invalid: ignored.
                })
            box.value = source
            try! loop.add(source)
            try! loop.add(ItemsSupport.keepAlive())
            source.signal()
            loop.run(in: .default, for: .zero)
            source.signal()
            loop.run(in: .default, for: .zero)
        }
        #expect(performed.current == 1)
        #expect(cancels.current == 1)
    }

    @Test func sourceInvalidatedByAnEarlierPerformInTheSamePassIsSkipped() {
        let recorder = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let late = LoopSource(order: 1) { _ in recorder.append("late") }
            let early = LoopSource(order: 0) { _ in
                recorder.append("early")
                late.invalidate()
            }
            try! loop.add(early)
            try! loop.add(late)
            try! loop.add(ItemsSupport.keepAlive())
            late.signal()
            early.signal()
            loop.run(in: .default, for: .zero)
            loop.run(in: .default, for: .zero)
        }
        #expect(recorder.all == ["early"])
    }

    /// A perform runs "in a mode the source is in": a source an earlier perform of the same pass removed from the
    /// running mode is not performed there, stays signalled, and is performed when another of its modes runs.
    ///
    /// A source removed from the running mode by an earlier perform of the same pass is not performed there (CF
    /// performs it anyway); it keeps its signal and is performed in a mode it is still in.
    @Test func sourceRemovedByAnEarlierPerformInTheSamePassIsNotPerformed() {
        let recorder = Recorder<String>()
        let signalled = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            let late = LoopSource(order: 1, cancel: { _, mode in recorder.append("cancel \(mode)") }) { _ in
                recorder.append("late in \(loop.currentMode?.name ?? "-")")
            }
            let early = LoopSource(order: 0) { _ in
                recorder.append("early")
                loop.remove(late)
            }
            try! loop.add(early)
            try! loop.add(late)
            try! loop.add(late, to: "other")
            try! loop.add(ItemsSupport.keepAlive())
            try! loop.add(ItemsSupport.keepAlive(), to: "other")
            late.signal()
            early.signal()
            loop.run(in: .default, for: .zero)
            signalled.append(late.isSignalled)
            loop.run(in: "other", for: .zero)
            late.invalidate()
            early.invalidate()
        }
        #expect(Array(recorder.all.prefix(3)) == ["early", "cancel default", "late in other"])
        #expect(signalled.all == [true])
    }

    @Test func sourceSignalledBeforeItIsAddedIsPerformedOnceAdded() {
        let performed = Counter()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in performed.increment() }
            source.signal()
            source.signal()
            try! loop.add(source)
            loop.run(in: .default, for: .zero)
            loop.run(in: .default, for: .zero)
        }
        #expect(performed.current == 1)
    }

    @Test func sourceSignalledBeforeBeingAddedFromAnotherThreadToASleepingLoopIsPerformed() {
        let performedOnLoop = Recorder<Bool>()
        let running = ItemsSupport.startRunningLoop()
        let loop = running.loop
        let source = LoopSource { _ in performedOnLoop.append(Loop.current === loop) }
        source.signal()
        #expect(waitUntil { loop.isWaiting })
        try! loop.add(source)
        #expect(waitUntil { performedOnLoop.count == 1 })
        running.finish()
        #expect(performedOnLoop.all == [true])
    }

    @Test func addingAnInvalidatedSourceThrowsInvalidated() {
        let codes = Recorder<LoopError.Code>()
        ItemsSupport.onLoopThread { loop in
            let source = LoopSource { _ in }
            source.invalidate()
            do throws(LoopError) {
                try loop.add(source)
            } catch {
                codes.append(error.code)
            }
        }
        #expect(codes.all == [.invalidated])
    }

    @Test func addingASourceToASecondLoopThrowsOwnedByAnotherLoop() {
        let first = ItemsSupport.startRunningLoop()
        let second = ItemsSupport.startRunningLoop()
        let source = LoopSource { _ in }
        var codes: [LoopError.Code] = []
        do throws(LoopError) {
            try first.loop.add(source)
            try first.loop.add(source, to: "other")  // Another mode of the same loop is fine.
            try second.loop.add(source)
        } catch {
            codes.append(error.code)
        }
        first.finish()
        second.finish()
        #expect(codes == [.ownedByAnotherLoop])
    }

    @Test func oneSignalledSourceAmongTenThousandIsPerformed() {
        let performed = Recorder<Int>()
        let sources = Box<[LoopSource]>()
        let running = ItemsSupport.startRunningLoop { loop in
            var made: [LoopSource] = []
            made.reserveCapacity(10_000)
            for index in 0..<10_000 {
                let source = LoopSource { _ in performed.append(index) }
                try! loop.add(source)
                made.append(source)
            }
            sources.value = made
        }
        #expect(waitUntil { running.loop.isWaiting })
        sources.value?[7_777].signal()
        #expect(waitUntil { performed.count == 1 })
        running.finish()
        #expect(performed.all == [7_777])
    }
}
