import Foundation
import RunLoopKit
import RunLoopKitFoundation

/// Foundation owns the main thread (`RunLoop.main.run(mode:before:)`) with `Loop.main` bridged: a block queued before
/// the bridge, a `LoopTimer` next to a Foundation `Timer` (both every 10 ms), a signal and a block from another
/// thread, a descriptor source that reads one byte of three per call (Foundation waits edge-triggered), 20 main-queue
/// blocks from another thread (each run once, by Foundation, costing the loop no pass), and a nested
/// `Loop.main.run(in:for:)` inside a Foundation callout, during which Foundation's timer keeps ticking.
func foundationOwnsScenario() {
    let early = Count()
    Loop.main.perform { early.add() }
    let bridge: FoundationBridge
    do { bridge = try Loop.main.bridgeToFoundation() } catch { fail("bridge: \(error)") }

    let loopTicks = Count()
    let foundationTicks = Count()
    let loopTimer = try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in loopTicks.add() }
    try! Loop.main.add(loopTimer)
    let foundationTimer = Timer(timeInterval: 0.01, repeats: true) { _ in foundationTicks.add() }
    RunLoop.main.add(foundationTimer, forMode: .default)
    let start = uptime()
    runFoundation(until: "one second") { uptime() - start >= 1 }
    let elapsed = uptime() - start
    let loopRate = Double(loopTicks.current) / elapsed
    let foundationRate = Double(foundationTicks.current) / elapsed
    check(early.current == 1, "the block queued before the bridge ran \(early.current) times")
    check(loopRate > 30 && loopRate < 120, "LoopTimer at \(loopRate)/s under RunLoop.main (10 ms interval)")
    check(foundationRate > 30 && foundationRate < 120, "Foundation's Timer at \(foundationRate)/s (10 ms)")

    let signalled = Count()
    let source = LoopSource { _ in signalled.add() }
    try! Loop.main.add(source)
    DispatchQueue.global().async { source.signal() }
    runFoundation(until: "a signal from another thread") { signalled.current == 1 }
    let performed = Count()
    DispatchQueue.global().async { _ = Loop.main.perform { performed.add() } }
    runFoundation(until: "a block from another thread") { performed.current == 1 }

    let pipe = TestPipe()
    let bytes = Count()
    let reader = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in
        var byte: UInt8 = 0
        if read(pipe.readEnd, &byte, 1) == 1 { bytes.add() }  // One byte per call, on purpose.
    }
    try! Loop.main.add(reader)
    DispatchQueue.global().async { pipe.write([1, 2, 3]) }  // One write: one edge for three bytes.
    runFoundation(until: "three bytes read one per call") { bytes.current == 3 }

    // Main-queue work is Foundation's to serve: it runs once per block, on the main thread, and costs no pass.
    loopTimer.invalidate()
    foundationTimer.invalidate()
    let passes = Count()
    let passCounter = LoopObserver(activities: .entry) { _, _ in passes.add() }
    try! Loop.main.add(passCounter)
    let mainBlocks = Count()
    let offMain = Count()
    DispatchQueue.global().async {
        for _ in 0..<20 {
            DispatchQueue.main.async {
                if !Thread.isMainThread { offMain.add() }
                mainBlocks.add()
            }
            usleep(1_000)
        }
    }
    runFoundation(until: "20 main-queue blocks") { mainBlocks.current == 20 }
    check(offMain.current == 0, "\(offMain.current) main-queue blocks ran off the main thread")
    let passesForMainQueue = passes.current
    check(passesForMainQueue <= 2, "20 main-queue blocks cost the loop \(passesForMainQueue) passes")
    passCounter.invalidate()

    // A nested run of the loop inside a Foundation callout keeps Foundation's timers going, and the loop's.
    let nestedFoundationTicks = Count()
    let nestedLoopTicks = Count()
    let innerTimer = Timer(timeInterval: 0.01, repeats: true) { _ in nestedFoundationTicks.add() }
    RunLoop.main.add(innerTimer, forMode: .default)
    let innerLoopTimer = try! LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in
        nestedLoopTicks.add()
    }
    try! Loop.main.add(innerLoopTimer)
    let nestedDone = Count()
    let ticksAtNestedStart = Shared((0, 0))
    let ticksAtNestedEnd = Shared((0, 0))
    let outerTimer = Timer(timeInterval: 0.05, repeats: false) { _ in
        ticksAtNestedStart.withLock { $0 = (nestedFoundationTicks.current, nestedLoopTicks.current) }
        Loop.main.run(in: .default, for: .milliseconds(300))
        ticksAtNestedEnd.withLock { $0 = (nestedFoundationTicks.current, nestedLoopTicks.current) }
        nestedDone.add()
    }
    RunLoop.main.add(outerTimer, forMode: .default)
    runFoundation(until: "the nested run") { nestedDone.current == 1 }
    let foundationDuringNested = ticksAtNestedEnd.value.0 - ticksAtNestedStart.value.0
    let loopDuringNested = ticksAtNestedEnd.value.1 - ticksAtNestedStart.value.1
    check(foundationDuringNested >= 5, "Foundation's timer fired \(foundationDuringNested) times in 300 ms nested")
    check(loopDuringNested >= 5, "the LoopTimer fired \(loopDuringNested) times in the nested 300 ms")
    innerTimer.invalidate()
    innerLoopTimer.invalidate()
    bridge.invalidate()
    pass(
        "loop_timer_per_s=\(Int(loopRate)) foundation_timer_per_s=\(Int(foundationRate)) "
            + "passes_for_20_main_queue_blocks=\(passesForMainQueue) nested_foundation_ticks=\(foundationDuringNested) "
            + "nested_loop_ticks=\(loopDuringNested)")
}
