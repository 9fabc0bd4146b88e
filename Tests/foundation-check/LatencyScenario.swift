import CoreFoundation
import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// Another thread → handler on the main thread, in one process, alternating three ways three times: a `LoopSource`
/// signalled under `RunLoop.main` with the bridge, the same under `Loop.main.run` alone, and Foundation's own
/// `RunLoop.main.perform` + `CFRunLoopWakeUp`. Each sample waits until the main thread sleeps.
func latencyScenario() {
    let samplesPerRound = 200
    var bridged: [Double] = []
    var loopAlone: [Double] = []
    var foundationAlone: [Double] = []
    let received = Shared<Double?>(nil)
    let source = LoopSource { _ in received.withLock { $0 = uptime() } }
    try! Loop.main.add(source)

    /// Sends `samplesPerRound` wake-ups from another thread with `send`, while `run` runs the main thread.
    func measure(send: @escaping @Sendable () -> Void, run: (@escaping @Sendable () -> Bool) -> Void) -> [Double] {
        let samples = Shared<[Double]>([])
        let finished = Count()
        DispatchQueue.global().async {
            for _ in 0..<samplesPerRound {
                usleep(300)  // The main thread goes back to sleep.
                received.withLock { $0 = nil }
                let sent = uptime()
                send()
                waitFor("the handler") { received.value != nil }
                samples.withLock { $0.append(received.value! - sent) }
            }
            finished.add()
        }
        run { finished.current == 1 }
        return samples.value
    }

    let signalSource: @Sendable () -> Void = { source.signal() }
    let performAndWake: @Sendable () -> Void = {
        RunLoop.main.perform { received.withLock { $0 = uptime() } }
        CFRunLoopWakeUp(CFRunLoopGetMain())
    }
    for _ in 0..<3 {
        let bridge = try! Loop.main.bridgeToFoundation()
        bridged += measure(send: signalSource, run: { runFoundation(until: "bridged samples", $0) })
        bridge.invalidate()
        loopAlone += measure(send: signalSource, run: { runLoop(until: "loop samples", $0) })
        foundationAlone += measure(send: performAndWake, run: { runFoundation(until: "Foundation samples", $0) })
    }
    pass(
        [summary(bridged, "bridged"), summary(loopAlone, "loop_alone"), summary(foundationAlone, "foundation_alone")]
            .joined(separator: " "))
}
