import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// `Loop.main` owns the main thread (`Loop.main.run(in:for:)`) with Foundation bridged: a Foundation `Timer` next to
/// a `LoopTimer` (both every 10 ms), `RunLoop.main.perform`, `NotificationQueue` (as soon as possible),
/// `FileHandle.readInBackgroundAndNotify()` fed from another thread, and a nested `RunLoop.main.run(until:)` inside a
/// loop handler, during which the loop's timer keeps ticking. Then what other threads hand Foundation directly: a
/// `Timer` added from another thread runs at the loop's next wake-up, and at once when sent through `Loop.main`.
func loopOwnsScenario() {
    let bridge: FoundationBridge
    do { bridge = try Loop.main.bridgeToFoundation() } catch { fail("bridge: \(error)") }
    let loopTicks = Count()
    let foundationTicks = Count()
    let loopTimer = try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in loopTicks.add() }
    try! Loop.main.add(loopTimer)
    let foundationTimer = Timer.scheduledTimer(withTimeInterval: 0.01, repeats: true) { _ in foundationTicks.add() }
    let start = uptime()
    runLoop(until: "one second") { uptime() - start >= 1 }
    let elapsed = uptime() - start
    let loopRate = Double(loopTicks.current) / elapsed
    let foundationRate = Double(foundationTicks.current) / elapsed
    check(loopRate > 30 && loopRate < 120, "LoopTimer at \(loopRate)/s under Loop.main (10 ms interval)")
    check(foundationRate > 30 && foundationRate < 120, "Foundation's Timer at \(foundationRate)/s under Loop.main")
    foundationTimer.invalidate()
    loopTimer.invalidate()

    let performed = Count()
    Loop.main.perform { RunLoop.main.perform { performed.add() } }
    runLoop(until: "RunLoop.main.perform") { performed.current == 1 }

    let posted = Count()
    let name = Notification.Name("RunLoopKitFoundationCheck")
    let token = NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { _ in posted.add() }
    Loop.main.perform { NotificationQueue.default.enqueue(Notification(name: name), postingStyle: .asap) }
    runLoop(until: "NotificationQueue's .asap post") { posted.current == 1 }
    NotificationCenter.default.removeObserver(token)

    let pipe = TestPipe(nonBlocking: false)
    let handle = FileHandle(fileDescriptor: pipe.readEnd, closeOnDealloc: false)
    let readBytes = Shared(0)
    let readToken = NotificationCenter.default.addObserver(
        forName: FileHandle.readCompletionNotification, object: handle, queue: nil
    ) { note in
        let data = note.userInfo?[NSFileHandleNotificationDataItem] as? Data
        readBytes.withLock { $0 += data?.count ?? 0 }
    }
    handle.readInBackgroundAndNotify()
    DispatchQueue.global().async { pipe.write([7, 7, 7, 7]) }
    runLoop(until: "readInBackgroundAndNotify's notification") { readBytes.value == 4 }
    NotificationCenter.default.removeObserver(readToken)

    // A nested run of Foundation's inside a loop handler keeps the loop's items going.
    let nestedTicks = Count()
    let nestedTimer = try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in nestedTicks.add() }
    try! Loop.main.add(nestedTimer)
    let nestedDone = Count()
    let ticksDuringNested = Shared(0)
    let outer = try! LoopTimer(after: .milliseconds(30)) { _ in
        let before = nestedTicks.current
        RunLoop.main.run(until: Date(timeIntervalSinceNow: 0.3))
        ticksDuringNested.withLock { $0 = nestedTicks.current - before }
        nestedDone.add()
    }
    try! Loop.main.add(outer)
    runLoop(until: "the nested RunLoop.main.run(until:)") { nestedDone.current == 1 }
    nestedTimer.invalidate()
    check(ticksDuringNested.value >= 5, "the LoopTimer fired \(ticksDuringNested.value) times in 300 ms nested")

    // Other threads: a Timer added to RunLoop.main from elsewhere wakes only Foundation's own descriptor.
    let foreignFired = Shared<Double?>(nil)
    let added = Shared<Double>(0)
    DispatchQueue.global().async {
        waitFor("the loop's sleep") { Loop.main.isWaiting }
        added.withLock { $0 = uptime() }
        RunLoop.main.add(
            Timer(timeInterval: 0.01, repeats: false) { _ in foreignFired.withLock { $0 = uptime() } },
            forMode: .default)
    }
    Loop.main.run(in: .default, for: .milliseconds(300))
    let firedInQuietLoop = foreignFired.value != nil
    let sentThroughLoop = Shared<Double?>(nil)
    let sentAt = Shared<Double>(0)
    DispatchQueue.global().async {
        waitFor("the loop's sleep") { Loop.main.isWaiting }
        sentAt.withLock { $0 = uptime() }
        _ = Loop.main.perform {
            RunLoop.main.add(
                Timer(timeInterval: 0.01, repeats: false) { _ in sentThroughLoop.withLock { $0 = uptime() } },
                forMode: .default)
        }
    }
    runLoop(until: "a Timer sent through Loop.main.perform") { sentThroughLoop.value != nil }
    let viaLoopMilliseconds = (sentThroughLoop.value! - sentAt.value) * 1000
    check(viaLoopMilliseconds < 100, "a 10 ms Timer sent through Loop.main fired after \(viaLoopMilliseconds) ms")
    runLoop(until: "the other thread's Timer, at the loop's next wake-up") { foreignFired.value != nil }
    bridge.invalidate()
    pass(
        "loop_timer_per_s=\(Int(loopRate)) foundation_timer_per_s=\(Int(foundationRate)) "
            + "nested_loop_ticks=\(ticksDuringNested.value) other_thread_timer_fired_while_idle=\(firedInQuietLoop) "
            + "timer_via_loop_perform_ms=\((viaLoopMilliseconds * 10).rounded() / 10)")
}
