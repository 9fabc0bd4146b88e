import Glibc
import RunLoopKit
import TestSupport
import Testing

/// `LoopBound`: state shared by `@Sendable` handlers of one loop, touched only on that loop's thread.
@Suite struct LoopBoundTests {
    /// Not `Sendable`: what a handler could not capture without the box.
    final class Tally {
        var calls: [String] = []
    }

    @Test func handlersOfEveryKindShareTheValueOnTheLoopsThread() throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let log = Recorder<[String]>()
        ItemsSupport.onLoopThread { loop in
            let tally = LoopBound(Tally(), on: loop)
            let source = LoopSource { _ in tally.value.calls.append("source") }
            let descriptor = try! FileDescriptorSource(descriptor: pipe.readEnd) { source, _ in
                pipe.drain()
                tally.value.calls.append("descriptor")
                source.invalidate()
            }
            let timer = try! LoopTimer(after: .milliseconds(1)) { _ in tally.value.calls.append("timer") }
            let observer = LoopObserver(activities: .exit, repeats: false) { _, _ in
                tally.withValue { $0.calls.append("observer") }
            }
            try! loop.add(source)
            try! loop.add(descriptor)
            try! loop.add(timer)
            try! loop.add(observer)
            loop.perform { tally.value.calls.append("block") }
            source.signal()
            pipe.write()
            ItemsSupport.run(loop) { tally.value.calls.count >= 5 }
            source.invalidate()
            loop.run(in: .default, for: .zero)  // One more run, for the exit observer.
            log.append(tally.value.calls.sorted())
        }
        #expect(log.all == [["block", "descriptor", "observer", "source", "timer"]])
    }

    @Test func aSendableValueBoundFromAnotherThreadIsUsedOnTheLoopsThread() {
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        let counts = LoopBound([String: Int](), on: running.loop)  // Made on this thread, for the loop's.
        #expect(counts.loop === running.loop)
        let done = ItemsSupport.Flag()
        let seen = Box<[String: Int]>()
        for word in ["a", "b", "a"] { running.loop.perform { counts.value[word, default: 0] += 1 } }
        running.loop.perform {
            seen.value = counts.withValue { $0 }
            done.set()
        }
        #expect(waitUntil { done.isSet })
        #expect(seen.value == ["a": 2, "b": 1])
    }

    @Test func withValueRethrowsTheBodysTypedError() {
        struct Refused: Error {}
        let log = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let box = LoopBound(1, on: loop)
            do throws(Refused) {
                try box.withValue { (value: inout Int) throws(Refused) in
                    value += 1
                    throw Refused()
                }
            } catch {
                log.append("refused, value \(box.value)")
            }
        }
        #expect(log.all == ["refused, value 2"])
    }
}
