import Foundation
import RunLoopKit
import RunLoopKitFoundation
import TestSupport
import Testing

/// The Foundation bridge on worker threads (one per test, so tests run in parallel): a loop's items run under
/// `RunLoop.current.run(mode:before:)`, and every misuse gets a typed error.
@Suite struct FoundationBridgeTests {
    /// A worker thread that bridges its loop, then runs Foundation's run loop until `done` holds (10 s at most).
    static func runUnderFoundation(
        setUp: @escaping @Sendable (Loop, FoundationBridge) -> Void, done: @escaping @Sendable () -> Bool
    ) -> TestThread {
        TestThread {
            let loop = Loop.current
            let bridge = try! loop.bridgeToFoundation()
            setUp(loop, bridge)
            let deadline = Date(timeIntervalSinceNow: 10)
            while !done() && Date() < deadline {
                _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 1))
            }
            bridge.invalidate()
        }
    }

    /// The code of the error `body` throws; `nil` when it throws none.
    static func failure(_ body: () throws -> FoundationBridge) -> LoopError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as LoopError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func aSignalFromAnotherThreadRunsUnderFoundationsRunLoop() throws {
        let handled = ItemsSupport.Flag()
        let source = LoopSource { _ in handled.set() }
        let ready = ItemsSupport.Flag()
        let thread = Self.runUnderFoundation(
            setUp: { loop, _ in
                try! loop.add(source)
                ready.set()
            }, done: { handled.isSet })
        #expect(waitUntil { ready.isSet })
        source.signal()
        thread.join()
        #expect(handled.isSet)
    }

    @Test func aTimerOfTheLoopFiresUnderFoundationsRunLoop() throws {
        let fired = Counter()
        let thread = Self.runUnderFoundation(
            setUp: { loop, _ in
                try! loop.add(
                    try! LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in fired.increment() })
            }, done: { fired.current >= 5 })
        thread.join()
        #expect(fired.current >= 5)
    }

    @Test func afterInvalidateFoundationRunsNoPass() throws {
        let handled = Counter()
        let source = LoopSource { _ in handled.increment() }
        let invalidated = ItemsSupport.Flag()
        let finished = ItemsSupport.Flag()
        let thread = TestThread {
            let loop = Loop.current
            try! loop.add(source)
            let bridge = try! loop.bridgeToFoundation()
            #expect(bridge.isValid)
            bridge.invalidate()
            #expect(!bridge.isValid)
            invalidated.set()
            RunLoop.current.run(until: Date(timeIntervalSinceNow: 0.2))
            // Bridging again after invalidate() works.
            let again = try! loop.bridgeToFoundation()
            RunLoop.current.run(until: Date(timeIntervalSinceNow: 0.2))
            again.invalidate()
            finished.set()
        }
        #expect(waitUntil { invalidated.isSet })
        source.signal()
        thread.join()
        #expect(finished.isSet)
        #expect(handled.current == 1, "the signal ran once, under the second bridge, not under the invalidated one")
    }

    @Test func aSecondBridgeOfTheSameLoopIsRefused() throws {
        let thread = TestThread {
            let loop = Loop.current
            let first = try! loop.bridgeToFoundation()
            #expect(Self.failure { try loop.bridgeToFoundation() } == .alreadyBridged)
            #expect(Self.failure { try loop.bridgeToFoundation(mode: "other") } == .alreadyBridged)
            #expect(first.isValid, "the refused second bridge left the first in place")
            first.invalidate()
        }
        thread.join()
    }

    @Test func aBridgeOfAnotherThreadsLoopIsRefused() throws {
        let loopBox = Box<Loop>()
        let release = ItemsSupport.Flag()
        let thread = TestThread {
            loopBox.value = Loop.current
            _ = waitUntil { release.isSet }
        }
        #expect(waitUntil { loopBox.value != nil })
        #expect(Self.failure { try loopBox.value!.bridgeToFoundation() } == .notOnLoopThread)
        release.set()
        thread.join()
        #expect(Self.failure { try loopBox.value!.bridgeToFoundation() } == .loopTerminated)
    }

    @Test func theCommonModesAreRefused() throws {
        let thread = TestThread {
            #expect(Self.failure { try Loop.current.bridgeToFoundation(mode: .common) } == .invalidMode)
        }
        thread.join()
    }
}
