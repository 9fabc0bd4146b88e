/// The readiness reports of one descriptor on one loop, as an `AsyncSequence`: each element is the set of
/// conditions seen (``DescriptorBackedSource/Events``). Create it with ``Loop/readiness(of:watching:in:)``.
///
/// Demand-driven: the loop watches the descriptor only while an iteration waits in `next()`. After each report
/// the underlying ``FileDescriptorSource`` leaves its mode until the next `next()`, so a descriptor that stays
/// ready (readiness is level-triggered) while the consumer has not read it yet never makes the loop spin: the
/// loop parks it after at most one more report. Nothing is lost either: if it is still ready at the next
/// `next()`, that call answers at once.
///
/// Each iteration (`makeAsyncIterator()`) has its own source, created on the first `next()` and invalidated
/// when the iteration ends: it returns `nil` or throws, its task is cancelled, or the iterator is dropped (a
/// `break` out of `for try await`). Several iterations of one descriptor, and other sources of the loop watching it,
/// share its registration in the loop's epoll set; each iteration is told of the readiness it waits for.
///
/// The sequence ends by throwing: ``LoopError/Code/loopTerminated`` when the loop's thread exits;
/// ``LoopError/Code/invalidated`` when the loop gives up the descriptor (closed and its number reused meanwhile);
/// the errors of ``Loop/add(_:to:)-(LoopItem,_)`` (``LoopError/Code/badDescriptor`` and so on) from
/// the first `next()`; `CancellationError` when the iterating task is cancelled. After it threw, `next()` answers
/// `nil`. A hang-up is an element like any other (``DescriptorBackedSource/Events/hangUp``): stop iterating when
/// a read returns end of file.
///
/// Threading: the sequence is `Sendable` and may be iterated from any task; an iterator belongs to one task, and
/// calling `next()` again while a call is pending traps.
public struct DescriptorReadiness: AsyncSequence, Sendable {
    /// The conditions seen in one report.
    public typealias Element = FileDescriptorSource.Events
    /// Errors end the sequence (see the type's documentation).
    public typealias Failure = any Error

    /// The loop that watches the descriptor.
    let loop: Loop
    /// The watched descriptor; it stays the caller's (close it only after the iteration ended).
    let descriptor: CInt
    /// The conditions asked for (``DescriptorBackedSource/Events/error`` and ``DescriptorBackedSource/Events/hangUp``
    /// are reported regardless).
    let events: FileDescriptorSource.Events
    /// The mode the source is added to while a `next()` waits.
    let mode: Loop.Mode

    /// Starts an iteration; nothing touches the loop before its first `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(watch: ReadinessWatch(loop: loop, descriptor: descriptor, events: events, mode: mode))
    }

    /// One iteration over the reports: owns its descriptor source, invalidated when the iterator goes away.
    ///
    /// Threading: use it from one task at a time.
    public struct Iterator: AsyncIteratorProtocol {
        let watch: ReadinessWatch

        /// Waits for the next report; `nil` once the iteration has ended.
        public mutating func next() async throws -> FileDescriptorSource.Events? {
            try await watch.next()
        }

        /// Waits for the next report, staying in the caller's isolation; `nil` once the iteration has ended.
        public mutating func next(
            isolation actor: isolated (any Actor)?
        ) async throws(any Error) -> FileDescriptorSource.Events? {
            try await watch.next()
        }
    }
}

extension Loop {
    /// The readiness reports of `descriptor`, as an `AsyncSequence` to iterate from any task; see
    /// ``DescriptorReadiness``. Safe from any thread; nothing touches the loop until iteration begins.
    ///
    /// ```swift
    /// for try await seen in loop.readiness(of: socket, watching: .readable) {
    ///     let count = read(socket, &buffer, buffer.count)   // read until EAGAIN, or just once:
    ///     if count == 0 { break }                           // a ready descriptor is reported again
    /// }
    /// ```
    /// - Parameters:
    ///   - descriptor: An open, pollable descriptor (a pipe, socket, eventfd, terminal, ...), still the caller's.
    ///   - events: The conditions to watch; default ``DescriptorBackedSource/Events/readable``.
    ///   - mode: The mode the source joins while a `next()` waits; default ``Mode/default``.
    public func readiness(
        of descriptor: CInt,
        watching events: FileDescriptorSource.Events = .readable,
        in mode: Mode = .default
    ) -> DescriptorReadiness {
        DescriptorReadiness(loop: self, descriptor: descriptor, events: events, mode: mode)
    }
}
