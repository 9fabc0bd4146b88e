import RunLoopKitSystem

/// A mutable value confined to one loop's thread, in a `Sendable` box: state that several `@Sendable` handlers of
/// that loop share, with no `@unchecked Sendable` and no lock (SwiftNIO's `NIOLoopBoundBox`).
///
/// Handlers of sources, timers, observers and blocks are `@Sendable` closures, so they cannot capture a plain `var`
/// or a non-`Sendable` object, although they all run on one thread. Capture a `LoopBound` instead: it is `Sendable`,
/// and every access checks that it runs on ``loop``'s thread, so the value is only ever touched there.
///
/// Threading: create it on any thread (the value is handed over with `sending`, so the creator keeps no access to
/// it). Read and write ``value`` (or call ``withValue(_:)``) only on ``loop``'s thread: anywhere else traps, in
/// release builds too, with a message naming the loop and the calling thread. Each access costs one check of the
/// calling thread (a thread-local load and a compare, as ``Loop/isCurrent``). The value is released on whichever
/// thread releases the box last.
public final class LoopBound<Value>: @unchecked Sendable {
    // Unchecked Sendable: `storage` is touched only on `loop`'s thread, which every access checks; the value came in
    // through a `sending` parameter, so no other thread holds it.

    /// The loop whose thread alone may touch the value.
    public let loop: Loop
    /// The value; `loop`'s thread only. Inlinable with the accessors, so a client specialises them for its `Value`:
    /// unspecialised, an access costs about 10 ns through the generic witnesses instead of the check's 1 ns.
    @usableFromInline var storage: Value

    /// Binds `value` to `loop`'s thread. Safe from any thread.
    ///
    /// - Parameters:
    ///   - value: The initial value; `sending`, so a non-`Sendable` value must not be used by the caller afterwards
    ///     (any `Sendable` value can be passed freely).
    ///   - loop: The loop on whose thread the value lives, ``Loop/current`` by default.
    public init(_ value: sending Value, on loop: Loop = .current) {
        self.loop = loop
        self.storage = value
    }

    /// The value. Only on ``loop``'s thread: anywhere else traps, naming the loop and the calling thread.
    ///
    /// Mutating through it (`counts.value[key, default: 0] += 1`) changes the value in place, with one check.
    @inlinable public var value: Value {
        get {
            requireLoopThread("read")
            return storage
        }
        set {
            requireLoopThread("written")
            storage = newValue
        }
        _modify {
            requireLoopThread("written")
            yield &storage
        }
    }

    /// Calls `body` with the value to read or change in place, and answers what it returns. Only on ``loop``'s
    /// thread: anywhere else traps, naming the loop and the calling thread.
    ///
    /// For several steps on one value with one thread check, and for a body that throws.
    @inlinable public func withValue<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        requireLoopThread("used")
        return try body(&storage)
    }

    /// Traps unless the caller runs on `loop`'s thread.
    @inlinable @inline(__always)
    func requireLoopThread(_ access: StaticString) {
        guard !loop.isCurrent else { return }
        misuse(access)
    }

    /// The trap, kept out of line so the check stays small.
    @usableFromInline @inline(never)
    func misuse(_ access: StaticString) -> Never {
        trap(
            "RunLoopKit: a LoopBound<\(Value.self)> bound to \(loop.loopDescriptionForTraps) was \(access) on "
                + "\(ThreadIdentity.describe(ThreadIdentity.currentThreadID())); touch its value only on that loop's "
                + "thread (in the loop's handlers, or in a block sent with loop.perform)")
    }
}
