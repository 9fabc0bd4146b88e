import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// What the C functions of these tests saw: the argument, and whether they ran on the thread expected. A C function
/// captures nothing, so it reports through globals; each test uses its own range of arguments.
private let calls = Recorder<Int>()
private let expectedThread = Atomic<UInt>(0)
private let onWrongThread = Counter()

private func record(_ argument: Int) {
    if UInt(pthread_self()) != expectedThread.load(ordering: .relaxed) { onWrongThread.increment() }
    calls.append(argument)
}

private func calls(in range: Range<Int>) -> [Int] { calls.all.filter { range.contains($0) } }

/// `perform(with:_:)`: a C function and a word, queued like a block, allocation-free. Serialized: the tests share
/// the globals above.
@Suite(.serialized) struct FunctionCallTests {
    @Test func callsFromAnotherThreadRunOnTheLoopInOrderWithBlocks() {
        let running = ItemsSupport.startRunningLoop()
        running.loop.perform { expectedThread.store(UInt(pthread_self()), ordering: .relaxed) }
        for index in 0..<1_000 {
            if index % 100 == 0 {
                running.loop.perform { calls.append(100_000 + index) }
            } else {
                #expect(running.loop.perform(with: 100_000 + index) { record($0) })
            }
        }
        #expect(waitUntil { calls(in: 100_000..<101_000).count == 1_000 })
        running.finish()
        #expect(calls(in: 100_000..<101_000) == Array(100_000..<101_000))
        #expect(onWrongThread.current == 0)
    }

    @Test func aCallForAnotherModeWaitsForThatMode() {
        ItemsSupport.onLoopThread { loop in
            #expect(loop.perform(in: "elsewhere", with: 200_001) { calls.append($0) })
            #expect(loop.perform(in: .common, with: 200_002) { calls.append($0) })
            loop.run(in: .default, for: .zero)
            #expect(calls(in: 200_000..<201_000) == [200_002])
            loop.run(in: "elsewhere", for: .zero)
            #expect(calls(in: 200_000..<201_000) == [200_002, 200_001])
        }
    }

    @Test func anExitedLoopAndAStoppedLoopThreadRefuseCalls() throws {
        let loopBox = Box<Loop>()
        ItemsSupport.onLoopThread { loop in loopBox.value = loop }
        #expect(!loopBox.value!.perform(with: 300_001) { calls.append($0) })

        let thread = try LoopThread(name: "calls")
        thread.perform(with: 300_002) { calls.append($0) }
        thread.stop()
        #expect(!thread.perform(with: 300_003) { calls.append($0) })  // Refused after the stop.
        #expect(calls(in: 300_000..<301_000) == [300_002])  // Accepted before the stop: ran in its drain.
    }
}
