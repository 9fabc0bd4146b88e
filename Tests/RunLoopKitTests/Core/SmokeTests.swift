import RunLoopKit
import Synchronization
import TestSupport
import Testing

@Suite struct SmokeTests {
    @Test func sourceSignalledFromAnotherThreadIsPerformedOnItsLoop() throws {
        let performed = Counter()
        let source = LoopSource { _ in performed.increment() }
        let (loop, thread) = startLoopThread { loop in
            try! loop.add(source)
            while performed.current < 3 { loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true) }
            source.invalidate()
        }
        for round in 1...3 {
            #expect(waitUntil { loop.isWaiting })
            source.signal()
            #expect(waitUntil { performed.current == round })
        }
        thread.join()
        #expect(performed.current == 3)
    }

    @Test func passOrderIsCFOrder() throws {
        let recorder = Recorder<String>()
        let (_, thread) = startLoopThread { loop in
            let observer = LoopObserver(activities: .all) { _, activity in recorder.append("\(activity)") }
            try! loop.add(observer)
            let timer = try! LoopTimer(after: .milliseconds(20)) { _ in recorder.append("timer") }
            try! loop.add(timer)
            let result = loop.run(in: .default, for: .seconds(5))
            recorder.append("\(result)")
        }
        thread.join()
        let events = recorder.all
        #expect(events.first == "entry")
        #expect(events.contains("timer"))
        let timerIndex = events.firstIndex(of: "timer")!
        #expect(events[timerIndex - 1] == "afterWaiting")
        #expect(events.suffix(2) == ["exit", "finished"])
    }
}
