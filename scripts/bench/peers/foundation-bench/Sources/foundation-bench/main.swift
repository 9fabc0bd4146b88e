// foundation-bench W1|W2|W3|W4|W5 [--quick]: the shared workloads on Foundation's RunLoop (swift-corelibs-foundation).
//
// A loop is a thread running `RunLoop.current.run(mode: .default, before: .distantFuture)` over and over, kept
// alive by a timer due in the distant future (CF's loop returns at once when its mode has nothing in it). Posting
// is `RunLoop.perform` followed by `CFRunLoopWakeUp`, because `perform` alone never wakes a sleeping loop. The
// CFRunLoop is the loop thread's own `CFRunLoopGetCurrent()` (`RunLoop.getCFRunLoop()` is internal on Linux).
// Timers are `Timer(fire:interval:repeats:block:)` added with `RunLoop.add(_:forMode:)` and cancelled with
// `invalidate()`. A Timer takes a wall-clock `Date` that CF converts back to its monotonic clock through two clock
// readings and a Double; the fire date gets 1 µs on top of the monotonic deadline so that conversion can never
// make a timer early (the lateness is still measured against the deadline itself).
import CoreFoundation
import Foundation
import PeerSupport

/// A running Foundation loop and its CFRunLoop, for posting from other threads.
final class FoundationLoop: @unchecked Sendable {
    let runLoop: RunLoop
    let cfRunLoop: CFRunLoop

    init(runLoop: RunLoop, cfRunLoop: CFRunLoop) {
        self.runLoop = runLoop
        self.cfRunLoop = cfRunLoop
    }
}

/// Hands the loop from its thread to the thread that started it.
final class Handoff: @unchecked Sendable {
    var loop: FoundationLoop?
    let ready = Latch()
}

struct FoundationRunLoop: PeerRuntime {
    /// Added to each fire date so that the Date → monotonic conversion never makes a timer early.
    static let conversionMargin = 1e-6

    func startLoop() -> FoundationLoop {
        let handoff = Handoff()
        _ = PeerThread {
            let runLoop = RunLoop.current
            let keepAlive = Foundation.Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
            runLoop.add(keepAlive, forMode: .default)
            handoff.loop = FoundationLoop(runLoop: runLoop, cfRunLoop: CFRunLoopGetCurrent())
            handoff.ready.add()
            while true { _ = runLoop.run(mode: .default, before: .distantFuture) }
        }
        handoff.ready.wait()
        return handoff.loop!
    }

    func post(to loop: FoundationLoop, _ body: @escaping @Sendable () -> Void) {
        loop.runLoop.perform(body)
        CFRunLoopWakeUp(loop.cfRunLoop)
    }

    func schedule(on loop: FoundationLoop, at deadline: Int64, log: FireLog, index: Int) -> Foundation.Timer {
        let delay = Double(deadline - PeerSupport.Clock.monotonic()) / 1e9 + Self.conversionMargin
        let timer = Foundation.Timer(fire: Date(timeIntervalSinceNow: delay), interval: 0, repeats: false) { _ in
            log.fire(index)
        }
        loop.runLoop.add(timer, forMode: .default)
        return timer
    }

    func cancel(_ timer: Foundation.Timer, on loop: FoundationLoop) {
        timer.invalidate()
    }
}

PeerBench.main(runtime: FoundationRunLoop(), name: "foundation", arguments: Array(CommandLine.arguments.dropFirst()))
