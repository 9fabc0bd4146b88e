/// A typed mailbox for one handler on a loop: any thread sends messages, the loop's thread receives them, with no
/// allocation per message.
///
/// Make a port with its handler, add it to a loop in one or more modes (`loop.add(port, to: mode)`), then
/// ``send(_:)`` from any thread. Each message is stored inline in a ring of ``capacity`` slots made with the port, so
/// a send allocates nothing, takes no lock and never waits for the loop; a signal of the port's own ``LoopSource``
/// wakes the loop only if it sleeps (an awake loop costs the sender one atomic exchange, and no system call). The
/// loop hands the messages to the handler at step 4 of a pass in one of the port's modes, as it performs a signalled
/// source, at most ``capacity`` of them per pass, so one busy port cannot starve the loop's other work: the rest
/// wait for the next pass, which comes at once.
///
/// **Order and delivery.** Messages from one thread arrive in the order that thread sent them; messages from
/// different threads interleave. Every accepted message is delivered exactly once, or released once if the port
/// is invalidated first. A send into a full ring is not refused: it joins an overflow list behind the ring (the one
/// path that takes a lock and may allocate, and only while the loop lags by a whole ring), which keeps each
/// sender's order. A loop's work from other threads is unbounded everywhere else in RunLoopKit
/// (``Loop/perform(in:_:file:line:)-(Mode,_,_,_)`` never refuses a live loop either), so a port behaves the same;
/// bound what you send if the loop can fall behind for long.
///
/// **The end.** ``invalidate()`` (any thread), or the exit of the loop's thread, closes the port: later sends answer
/// `false` and release their message; messages accepted and not delivered are released on the loop's thread.
///
/// Threading: ``send(_:)``, ``send(contentsOf:)``, ``invalidate()`` and ``isValid`` are safe from any thread. The
/// handler runs on the loop's thread. A port belongs to one loop, bound by its first add.
///
/// ```swift
/// let port = LoopPort<Int>(capacity: 256) { value in print("received \(value)") }
/// try loop.add(port)
/// port.send(42)  // from any thread
/// ```
public final class LoopPort<Message: Sendable>: Sendable {
    /// The messages waiting, in a ring of ``capacity`` slots. Inlinable use: ``send(_:)`` is specialised for the
    /// message type where it is called, so a send runs no generic code.
    @usableFromInline let ring: MessageRing<Message>
    /// What the loop performs to deliver them; signalled by every send.
    @usableFromInline let source: LoopSource

    /// How many messages the ring holds (the capacity asked for, rounded up to a power of two between 2 and
    /// 1,048,576), and how many the loop delivers at most per pass.
    public var capacity: Int { ring.capacity }

    /// Whether the port still takes messages: `false` once invalidated, or once its loop's thread exited. Any thread.
    public var isValid: Bool { source.isValid && !ring.isClosed }

    /// Creates a port whose `receive` handler is called on its loop's thread with each message.
    ///
    /// - Parameters:
    ///   - capacity: The ring's slots, allocated now: rounded up to a power of two, at least 2, at most 2^20.
    ///     Also the most messages delivered per pass. Default 1,024.
    ///   - order: Among sources signalled in the same pass, lower orders are performed first. Default 0.
    ///   - file: Where the port is made, for the flight recorder; leave the default, the caller's `#fileID`.
    ///   - line: The line of that place; leave the default.
    ///   - receive: Called on the loop's thread with each message, in a pass of one of the port's modes.
    public init(
        capacity: Int = 1024, order: Int = 0, file: StaticString = #fileID, line: UInt = #line,
        receive: @escaping @Sendable (Message) -> Void
    ) {
        let ring = MessageRing<Message>(capacity: capacity)
        let perPass = ring.capacity
        self.ring = ring
        self.source = LoopSource(
            order: order,
            cancel: { loop, _ in
                // Leaving a mode: the end only if the port was invalidated or the loop's thread is exiting.
                guard ring.isClosed || loop.isTerminated else { return }
                ring.close()
                ring.discardAll()
            },
            perform: { source in
                // Stops once the port is invalidated, by the handler or another thread: no call starts after.
                _ = ring.dequeue(upTo: perPass) { message in
                    receive(message)
                    return source.isValid
                }
                if ring.hasWaiting { source.signal() }  // Over the bound: the rest in the next pass.
            },
            file: file, line: line)
    }

    deinit {
        source.invalidate()
    }

    /// Sends `message` to the port's handler. Safe from any thread.
    ///
    /// Stores the message in the ring (or, if it is full, in the overflow list behind it) and wakes the loop if it
    /// sleeps. A message sent before the port is added to a loop waits for it.
    /// - Returns: `false` if the port was invalidated or its loop's thread exited: the message is released and will
    ///   never be received.
    @inlinable @discardableResult
    public func send(_ message: consuming sending Message) -> Bool {
        guard ring.enqueue(message) != .refused else { return false }
        source.signal()
        return true
    }

    /// Sends every message of `messages`, in order, waking the loop at most once. Safe from any thread.
    ///
    /// The same as ``send(_:)`` for each message, but for the signal and the wake-up, made once after the last.
    /// - Returns: How many were accepted: all of them, or fewer if the port was closed meanwhile (the rest are
    ///   released).
    @discardableResult
    public func send<Messages: Sequence<Message>>(contentsOf messages: Messages) -> Int {
        var accepted = 0
        for message in messages {
            guard ring.enqueue(message) != .refused else { break }
            accepted += 1
        }
        if accepted > 0 { source.signal() }
        return accepted
    }

    /// Closes the port: later sends answer `false`, the handler is not called again (a call in progress on the loop's
    /// thread finishes), and the messages not delivered are released on the loop's thread (or when the port goes, if
    /// it was never added). Safe from any thread; invalidating twice does nothing.
    public func invalidate() {
        ring.close()
        source.invalidate()
    }

    /// Adds the port to `mode` of `loop`; see `Loop.add(_:to:)`.
    func add(to loop: Loop, in mode: Loop.Mode) throws(LoopError) {
        if ring.isClosed { source.invalidate() }  // Its loop's thread exited: the port is spent, say so.
        try loop.add(source, to: mode)
        if !source.isValid {
            // Invalidated while it joined (another thread's `invalidate()` between the add's check and the join):
            // it may be bound and in no mode, where no cancel handler runs. Release what waits on the loop's thread
            // all the same; after a cancel handler that did run, this finds nothing.
            let ring = ring
            loop.perform {
                ring.close()
                ring.discardAll()
            }
        }
    }

    /// Removes the port from `mode` of its loop; see `Loop.remove(_:from:)`.
    func remove(from loop: Loop, in mode: Loop.Mode) {
        loop.remove(source, from: mode)
    }
}

extension Loop {
    /// Adds `port` to `mode` (or to every common mode, for ``Mode/common``): its handler receives messages in passes
    /// of that mode. Safe from any thread, as an item's add; call it again for more modes.
    /// - Throws: ``LoopError/Code/invalidated`` (the port was invalidated, or its loop's thread exited),
    ///   ``LoopError/Code/ownedByAnotherLoop``, ``LoopError/Code/loopTerminated``.
    public func add<M>(_ port: LoopPort<M>, to mode: Mode = .default) throws(LoopError) {
        try port.add(to: self, in: mode)
    }

    /// Removes `port` from `mode`; messages sent meanwhile wait until it is in a running mode again. Safe from any
    /// thread.
    public func remove<M>(_ port: LoopPort<M>, from mode: Mode = .default) {
        port.remove(from: self, in: mode)
    }
}
