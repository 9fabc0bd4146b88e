import Foundation
import Glibc
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// A thread-safe list of events, for asserting the order of callouts.
package final class Recorder<Element: Sendable>: Sendable {
    private let storage = Locked<[Element]>([])

    package init() {}

    package func append(_ element: Element) { storage.withLock { $0.append(element) } }
    package var all: [Element] { storage.withLock { $0 } }
    package var count: Int { storage.withLock { $0.count } }
    package func removeAll() { storage.withLock { $0.removeAll() } }
}

/// A thread-safe counter.
package final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    package init() {}
    @discardableResult package func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
    package var current: Int { value.load(ordering: .relaxed) }
}

/// Everything `descriptor` yields until end of file, or, for a non-blocking descriptor, until it has nothing more
/// for now (`EAGAIN`). Leaves the descriptor open.
package func readToEnd(_ descriptor: CInt) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while case let count = read(descriptor, &buffer, buffer.count), count > 0 {
        bytes += buffer[0..<count]
    }
    return bytes
}

/// A box for handing a value out of another thread.
package final class Box<Value: Sendable>: Sendable {
    private let storage: Locked<Value?>
    package init(_ value: Value? = nil) { storage = Locked(value) }
    package var value: Value? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// Polls `condition` until it holds or `timeout` passes; answers whether it held. Never a fixed sleep.
package func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(200)
    }
    return condition()
}

/// ``waitUntil(timeout:_:)`` for async tests: suspends between looks instead of blocking, so the cooperative pool
/// (two threads on a 2-CPU machine) stays free to run the tasks the condition waits for, `interval` at a time.
package func awaitCondition(
    timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(1), _ condition: () -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return condition()
}

/// A started thread that can be joined.
package final class TestThread: @unchecked Sendable {
    private var thread: pthread_t
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `body` on a new thread.
    package init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { pointer in
                let body = Unmanaged<Body>.fromOpaque(pointer!).takeRetainedValue()
                body.run()
                return nil
            }, context)
        precondition(status == 0)
        self.thread = thread
    }

    package func join() { pthread_join(thread, nil) }
}

/// Starts a thread that makes its loop, hands it over, runs `body(loop)` and exits; answers the loop and thread.
package func startLoopThread(_ body: @escaping @Sendable (Loop) -> Void) -> (Loop, TestThread) {
    let box = Box<Loop>()
    let thread = TestThread {
        let loop = Loop.current
        box.value = loop
        body(loop)
    }
    _ = waitUntil { box.value != nil }
    return (box.value!, thread)
}

/// A pipe whose ends are closed when the value goes away.
package final class Pipe: Sendable {
    package let readEnd: CInt
    package let writeEnd: CInt
    package init() {
        var fds: [CInt] = [0, 0]
        precondition(pipe(&fds) == 0)
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }
    package func write(_ byte: UInt8 = 1) {
        var b = byte
        _ = Glibc.write(writeEnd, &b, 1)
    }
    package func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Glibc.read(readEnd, &buffer, 4096) > 0 {}
    }
    package func close() {
        Glibc.close(readEnd)
        Glibc.close(writeEnd)
    }
}

/// Puts the file `descriptor` names at `number`, which the caller still holds open, and closes `descriptor`:
/// afterwards `number` names the new file and the old one is closed there. Answers whether `dup2` succeeded.
///
/// One `dup2` closes the old file and fills the number in one step. Tests run in parallel in one process, and a new
/// descriptor takes the lowest free number: closing `number` first would let another test's new loop take it for its
/// epoll set between the two calls, and lose it to the `dup2` (see Docs/Reliability.md, "How it is tested").
@discardableResult
package func moveDescriptor(_ descriptor: CInt, onto number: CInt) -> Bool {
    guard dup2(descriptor, number) == number else { return false }
    close(descriptor)
    return true
}

/// The number of open descriptors of this process.
/// Starts libdispatch's manager thread, which opens three descriptors of its own (an epoll set, an eventfd, a
/// timerfd) the first time a Dispatch timer or source needs it, if nothing has yet: a test that compares
/// ``openDescriptorCount()`` before and after calls it first, so Dispatch work of the test process (Swift Testing's
/// own) cannot start the manager in between.
package func startDispatchManager() {
    let fired = DispatchSemaphore(value: 0)
    let timer = DispatchSource.makeTimerSource(queue: .global())
    timer.schedule(deadline: .now())
    timer.setEventHandler { fired.signal() }
    timer.activate()
    fired.wait()
    timer.cancel()
}

package func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// The number of descriptors registered in epoll set `epoll`, read from `/proc/self/fdinfo`.
package func epollEntryCount(_ epoll: CInt) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/fdinfo/\(epoll)", encoding: .utf8) else { return -1 }
    return text.split(separator: "\n").filter { $0.hasPrefix("tfd:") }.count
}
