import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// The order of activities and callouts within a run, pass by pass, as CF's `__CFRunLoopRun` does it.
@Suite struct PassOrderTests {
    /// Pass 1 polls (a source ran): blocks, sources, blocks again, then the due timer, the ready descriptor, and
    /// the end-of-pass blocks; no beforeWaiting or afterWaiting.
    @Test func aPollingPassRunsBlocksSourcesTimersDescriptorsThenBlocks() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let events = Recorder<String>()
        let result = Box<Loop.RunResult>()
        let descriptorSource = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            pipe.drain()
            events.append("descriptor")
            Loop.current.perform {
                events.append("block queued by descriptor")
                Loop.current.stop()
            }
        }
        ItemsSupport.onLoopThread { loop in
            CoreRunSupport.recordActivities(of: loop, into: events)
            let source = LoopSource { _ in
                events.append("source")
                loop.perform { events.append("block queued by source") }
            }
            try! loop.add(source)
            try! loop.add(try! LoopTimer(at: .now) { _ in events.append("timer") })
            try! loop.add(descriptorSource)
            try! loop.add(ItemsSupport.keepAlive())
            loop.perform { events.append("block") }
            source.signal()
            pipe.write()
            result.value = loop.run(in: .default, for: .seconds(10))
            descriptorSource.invalidate()
        }
        #expect(
            events.all == [
                "entry", "beforeTimers", "beforeSources", "block", "source", "block queued by source", "timer",
                "descriptor", "block queued by descriptor", "exit",
            ])
        #expect(result.value == .stopped)
    }

    /// A pass with nothing to do before sleeping: beforeWaiting, sleep, afterWaiting, then the timer that woke it
    /// and the blocks; the next pass finds the descriptor the timer made ready.
    @Test func aSleepingPassWakesForTheTimerThenHandlesWhatFollows() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let events = Recorder<String>()
        let result = Box<Loop.RunResult>()
        let descriptorSource = try FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
            pipe.drain()
            events.append("descriptor")
            Loop.current.stop()
        }
        ItemsSupport.onLoopThread { loop in
            CoreRunSupport.recordActivities(of: loop, into: events)
            try! loop.add(descriptorSource)
            try! loop.add(
                try! LoopTimer(after: .milliseconds(30)) { _ in
                    events.append("timer")
                    pipe.write()
                    loop.perform { events.append("block queued by timer") }
                })
            result.value = loop.run(in: .default, for: .seconds(10))
            descriptorSource.invalidate()
        }
        #expect(
            events.all == [
                "entry",
                "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer", "block queued by timer",
                "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "descriptor",
                "exit",
            ])
        #expect(result.value == .stopped)
    }

    /// A source signalled from another thread while the loop sleeps: it wakes the loop, and is performed in the
    /// pass after the wake (sources come before the sleep in a pass).
    @Test func aSourceSignalledDuringTheSleepRunsInTheNextPass() {
        let events = Recorder<String>()
        let sourceBox = Box<LoopSource>()
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let source = LoopSource { _ in
                events.append("source")
                loop.stop()
            }
            try! loop.add(source)
            sourceBox.value = source
            CoreRunSupport.recordActivities(of: loop, into: events)
            loop.run(in: .default, for: .seconds(10))
        }
        #expect(waitUntil { sourceBox.value != nil && loop.isWaiting })
        sourceBox.value!.signal()
        thread.join()
        #expect(
            events.all == [
                "entry",
                "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
                "beforeTimers", "beforeSources", "source",
                "exit",
            ])
    }
}
