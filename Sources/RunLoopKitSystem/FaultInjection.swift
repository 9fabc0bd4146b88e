#if RUNLOOPKIT_FAULT_INJECTION
import CRunLoopShims
import Glibc
import Synchronization

/// Scripted system-call failures, so tests can "play the kernel" and try every call site failing: debug builds
/// only (the package defines `RUNLOOPKIT_FAULT_INJECTION` for the debug configuration; release builds contain
/// none of this).
///
/// Every wrapped call goes through ``retryingOnInterrupt(_:on:_:)``, which asks ``injectedErrno(_:on:)`` first:
/// while a script is installed, a matching call is not made and fails with the scripted `errno` instead
/// (`EINTR` is retried, as a real one is). C code that cannot reach Swift (the services' signal relay's handler)
/// asks CRunLoopShims' countdown (FaultCountdown.h), which ``install(_:)`` sets; `pthread_create` asks through its
/// own hook. A ledger of the descriptors the library opened and has not closed lets a test prove nothing
/// leaked.
///
/// The script is process-wide: tests that install one run in a child process of their own (an exit test),
/// where no other test's calls can match it. Cost when no script is installed: one relaxed atomic load per call.
package enum FaultInjection {
    /// One scripted failure: calls named `call` (and made on `descriptor`, when given) fail with `errno`, after
    /// the first `skip` of them went through, `times` times in a row.
    package struct Fault: Sendable, CustomStringConvertible {
        /// The C name the wrapper gives the call, e.g. `"eventfd"` or `"epoll_ctl(EPOLL_CTL_MOD)"`.
        package var call: String
        /// The `errno` the call fails with.
        package var errno: CInt
        /// Only calls made on this descriptor match; -1 matches any.
        package var descriptor: CInt
        /// How many matching calls go through before the first failure.
        package var skip: Int
        /// How many matching calls fail, from then on (`Int.max`: every later one).
        package var times: Int

        /// A fault for `call`, failing with `errno`.
        package init(_ call: String, _ errno: CInt, on descriptor: CInt = -1, skip: Int = 0, times: Int = 1) {
            self.call = call
            self.errno = errno
            self.descriptor = descriptor
            self.skip = skip
            self.times = times
        }

        package var description: String {
            let target = descriptor >= 0 ? " on \(descriptor)" : ""
            let count = times == .max ? "for good" : "\(times)×"
            return "\(call)\(target) → errno \(errno) \(count) after \(skip)"
        }
    }

    private struct Script {
        var faults: [Fault] = []
        /// Per fault: matching calls seen so far, and how many of them were failed.
        var seen: [Int] = []
        var injected: [Int] = []
        /// The fault aimed at C code (the signal relay's handler), counted by CRunLoopShims' countdown.
        var relayIndex: Int?
    }

    private static let isActive = Atomic<Bool>(false)
    private static let script = Locked(Script())
    private static let ledger = Locked([CInt: String]())

    /// Installs `faults`, replacing any script; the ledger keeps counting. Any thread.
    package static func install(_ faults: [Fault]) {
        let relayIndex = faults.firstIndex { $0.call == relayWriteCall }
        script.withLock { script in
            script = Script(faults: faults, seen: faults.map { _ in 0 }, injected: faults.map { _ in 0 })
            script.relayIndex = relayIndex
        }
        let relay = relayIndex.map { faults[$0] }
        crunloop_fault_countdown_set(relay?.errno ?? 0, CInt(clamping: relay?.times ?? 0))
        isActive.store(true, ordering: .sequentiallyConsistent)
    }

    /// Removes the script and answers, per fault in installation order, how many calls it failed.
    @discardableResult
    package static func remove() -> [Int] {
        isActive.store(false, ordering: .sequentiallyConsistent)
        let relayFailures = Int(crunloop_fault_countdown_set(0, 0))
        return script.withLock { script in
            defer { script = Script() }
            var counts = script.injected
            if let index = script.relayIndex { counts[index] = relayFailures }
            return counts
        }
    }

    /// The call name a fault uses for the services' signal relay's `write(2)` from its C signal handler (which
    /// cannot reach Swift: CRunLoopShims' countdown stands in for the script).
    package static let relayWriteCall = "write (signal relay)"

    /// Runs `body` with `faults` installed and answers its result with the failures each fault caused.
    package static func with<T>(_ faults: [Fault], _ body: () throws -> T) rethrows -> (T, [Int]) {
        install(faults)
        let result: T
        do {
            result = try body()
        } catch {
            remove()
            throw error
        }
        return (result, remove())
    }

    /// The scripted `errno` for this call, or `nil` to make the real call. Called by the syscall layer.
    @inline(__always)
    package static func injectedErrno(_ call: StaticString, on descriptor: CInt) -> CInt? {
        guard isActive.load(ordering: .relaxed) else { return nil }
        return scriptedErrno(call.description, on: descriptor)
    }

    /// ``injectedErrno(_:on:)`` for calls that are not made through ``retryingOnInterrupt(_:on:_:)``.
    package static func injectedErrno(_ call: String) -> CInt? {
        guard isActive.load(ordering: .relaxed) else { return nil }
        return scriptedErrno(call, on: -1)
    }

    @inline(never)
    private static func scriptedErrno(_ call: String, on descriptor: CInt) -> CInt? {
        script.withLock { script in
            for index in script.faults.indices {
                let fault = script.faults[index]
                guard fault.call == call, fault.descriptor < 0 || fault.descriptor == descriptor else { continue }
                script.seen[index] += 1
                guard script.seen[index] > fault.skip, script.injected[index] < fault.times else { continue }
                script.injected[index] += 1
                return fault.errno
            }
            return nil
        }
    }

    // MARK: The descriptor ledger

    /// Notes a descriptor the library opened. Called by the syscall layer's creating calls.
    package static func recordOpened(_ descriptor: CInt, by call: StaticString) {
        ledger.withLock { $0[descriptor] = call.description }
    }

    /// Notes a descriptor the library closed. Called by ``FileDescriptorCalls/close(_:)``.
    package static func recordClosed(_ descriptor: CInt) {
        _ = ledger.withLock { $0.removeValue(forKey: descriptor) }
    }

    /// The descriptors the library opened (epoll sets, eventfds, timerfds, pidfds) and has not closed yet,
    /// with the call that opened each. Any thread.
    package static var openDescriptors: [CInt: String] { ledger.withLock { $0 } }
}
#endif
