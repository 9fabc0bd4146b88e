import Foundation
import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

import class TestSupport.Pipe

@testable import RunLoopKitGLib

/// GLib for the tests: its calls, or `nil` where GLib is not installed. The GLib suites are skipped then, except
/// where `RUNLOOPKIT_REQUIRE_GLIB=1` (CI sets it): there ``GLibLoadingTests`` fails instead.
enum GLibTesting {
    static let calls: GLibCalls? = try? GLibCalls()
    static var isAvailable: Bool { calls != nil }
    static let isRequired = ProcessInfo.processInfo.environment["RUNLOOPKIT_REQUIRE_GLIB"] == "1"
}

/// The CPU time the calling thread has used, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
func threadCPUNanoseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// A thread GLib owns: its GLib main loop runs a context of its own, with the thread's RunLoopKit loop attached
/// (``RunLoopKit/Loop/attachToGLib(context:mode:priority:)``). `setUp` runs on the thread first, then the loop is
/// attached and `g_main_loop_run` starts at once: no pass of the loop runs before GLib's first iteration.
final class GLibHostThread: @unchecked Sendable {
    // Unchecked: the pointers are GLib's thread-safe objects; `thread` is set once in init.
    let glib: GLibCalls
    let context: OpaquePointer
    let mainLoop: OpaquePointer
    private let attached = Box<GLibAttachment>()
    private var thread: TestThread?

    init(setUp: @escaping @Sendable (Loop, OpaquePointer) -> Void = { _, _ in }) {
        let glib = GLibTesting.calls!
        self.glib = glib
        let context = glib.newContext()
        let mainLoop = glib.newMainLoop(context)
        self.context = context
        self.mainLoop = mainLoop
        let attached = attached
        nonisolated(unsafe) let pointers = (context, mainLoop)
        thread = TestThread {
            let loop = Loop.current
            setUp(loop, pointers.0)
            let attachment = try! loop.attachToGLib(context: pointers.0)
            attached.value = attachment
            glib.run(pointers.1)
            attachment.invalidate()
        }
        _ = waitUntil { attached.value != nil }
    }

    var attachment: GLibAttachment { attached.value! }
    var loop: Loop { attachment.loop }

    /// Runs `body` on the thread, inside a pass of its loop, and answers what it returned.
    func onThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> Value {
        let result = Box<Value>()
        loop.perform { result.value = body() }
        _ = waitUntil { result.value != nil }
        return result.value!
    }

    /// Quits GLib's main loop (from inside it, so a quit cannot come before the run starts), joins the thread and
    /// drops the context.
    func stop() {
        nonisolated(unsafe) let mainLoop = mainLoop
        glib.invoke(context) { [glib] in glib.quit(mainLoop) }
        thread?.join()
        glib.unref(mainLoop: mainLoop)
        glib.unref(context: context)
    }
}

/// A thread RunLoopKit owns: its loop runs (kept running while empty) and drives a GLib context of its own
/// (``RunLoopKit/Loop/driveGLib(context:mode:)``). `setUp` runs on the thread once the driver is in place.
final class GLibDrivingThread: @unchecked Sendable {
    // Unchecked: the pointer is GLib's thread-safe context; `thread` is set once in init.
    let glib: GLibCalls
    let context: OpaquePointer
    private let started = Box<GLibDriver>()
    private var thread: TestThread?

    init(setUp: @escaping @Sendable (Loop, OpaquePointer) -> Void = { _, _ in }) {
        let glib = GLibTesting.calls!
        self.glib = glib
        let context = glib.newContext()
        self.context = context
        let started = started
        nonisolated(unsafe) let pointer = context
        thread = TestThread {
            let loop = Loop.current
            loop.keepsRunningWhenEmpty = true
            let driver = try! loop.driveGLib(context: pointer)
            setUp(loop, pointer)
            started.value = driver
            loop.run()
            driver.invalidate()
        }
        _ = waitUntil { started.value != nil }
    }

    var driver: GLibDriver { started.value! }
    var loop: Loop { driver.loop }

    /// Runs `body` on the thread, inside a pass of its loop, and answers what it returned.
    func onThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> Value {
        let result = Box<Value>()
        loop.perform { result.value = body() }
        _ = waitUntil { result.value != nil }
        return result.value!
    }

    /// Stops the loop (its driver is invalidated on the thread), joins the thread and drops the context.
    func stop() {
        loop.stop()
        thread?.join()
        glib.unref(context: context)
    }
}

/// A thread running GLib alone: `g_main_loop_run` on a context of its own, for reference figures.
final class GLibOnlyThread: @unchecked Sendable {
    // Unchecked: GLib's thread-safe objects; `thread` is set once in init.
    let glib: GLibCalls
    let context: OpaquePointer
    let mainLoop: OpaquePointer
    private var thread: TestThread?

    init(setUp: @escaping @Sendable (OpaquePointer) -> Void) {
        let glib = GLibTesting.calls!
        self.glib = glib
        context = glib.newContext()
        mainLoop = glib.newMainLoop(context)
        nonisolated(unsafe) let pointers = (context, mainLoop)
        let running = ItemsSupport.Flag()
        thread = TestThread {
            setUp(pointers.0)
            // Set from inside the run, once GLib owns the context: a test that then tries to drive the context from
            // another thread must find it owned (set before `run`, it raced the run's acquire under load).
            glib.invoke(pointers.0) { running.set() }
            glib.run(pointers.1)
        }
        _ = waitUntil { running.isSet }
    }

    func stop() {
        nonisolated(unsafe) let mainLoop = mainLoop
        glib.invoke(context) { [glib] in glib.quit(mainLoop) }
        thread?.join()
        glib.unref(mainLoop: mainLoop)
        glib.unref(context: context)
    }
}

/// A GLib context pointer that closures may capture: GLib's contexts are thread-safe objects.
struct SharedContext: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// One way of sharing the thread with GLib, for checks that hold both ways: starts a thread whose loop and GLib
/// context `setUp` prepares, and answers the loop and how to stop the thread.
typealias GLibSharedThreadStart = (@escaping @Sendable (Loop, OpaquePointer) -> Void) -> (loop: Loop, stop: () -> Void)

extension GLibTesting {
    /// GLib's watch and the app's `FileDescriptorSource` on one descriptor of one loop: a write reaches both.
    static func expectADescriptorWatchedByBothReachesBoth(_ start: GLibSharedThreadStart) throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let glibSaw = Counter()
        let loopSaw = Counter()
        let readEnd = pipe.readEnd
        let source = try FileDescriptorSource(descriptor: readEnd) { source, _ in
            loopSaw.increment()
            source.invalidate()
        }
        let thread = start { loop, context in
            try! loop.add(source)
            GLibTesting.calls!.addDescriptorWatch(context, descriptor: readEnd, condition: 1) { _ in
                glibSaw.increment()
                return false
            }
        }
        #expect(waitUntil { thread.loop.isWaiting })
        pipe.write()
        #expect(waitUntil { glibSaw.current == 1 && loopSaw.current == 1 })
        thread.stop()
    }
}
