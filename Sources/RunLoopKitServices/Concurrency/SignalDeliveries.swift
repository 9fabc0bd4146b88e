import Glibc
import RunLoopKit
import RunLoopKitSystem

/// A Unix signal's deliveries as an asynchronous sequence, watched by a ``SignalSource`` on a loop: each element is
/// how many times the signal arrived since the previous element (deliveries that arrive together are counted, never
/// lost). Made by `Loop.signals(_:in:)`.
///
/// The signal is watched from the iterator's first `next()` until the iteration ends: the consuming task is
/// cancelled (then `next()` answers `nil`), or the iterator is dropped. Each iteration has a source of its own, so
/// two iterations both see every delivery. The sequence never ends by itself; if the loop's thread exits, it waits
/// for good (cancel the task).
///
/// Threading: make and iterate it from any task; the source's handler runs on the loop's thread and hands the counts
/// over through an `AsyncThrowingStream`.
public struct SignalDeliveries: AsyncSequence, Sendable {
    /// How many times the signal arrived since the previous element.
    public typealias Element = Int
    /// What `next()` throws: the errors of ``SignalSource/init(signal:order:handler:)`` and `Loop.add(_:to:)`.
    public typealias Failure = any Error

    /// The loop whose passes report the deliveries.
    let loop: Loop
    /// The signal watched.
    let signal: CInt
    /// The mode the source runs in.
    let mode: Loop.Mode

    /// An iterator whose first `next()` starts watching.
    public func makeAsyncIterator() -> Iterator {
        Iterator(deliveries: self)
    }

    /// Watches the signal from its first `next()` until it is dropped or its task is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        let deliveries: SignalDeliveries
        var counts: AsyncThrowingStream<Int, any Error>.Iterator?

        /// The number of deliveries since the previous element; `nil` once the task is cancelled.
        /// - Throws: What creating or adding the source threw (first call only).
        public mutating func next() async throws -> Int? {
            if counts == nil { counts = deliveries.makeStream().makeAsyncIterator() }
            return try await counts?.next()
        }
    }

    /// A stream fed by a new source on ``loop``; ending the stream (cancellation, or the iterator dropped)
    /// invalidates the source.
    private func makeStream() -> AsyncThrowingStream<Int, any Error> {
        let (loop, signal, mode) = (loop, signal, mode)
        return AsyncThrowingStream { continuation in
            do {
                let source = try SignalSource(signal: signal) { _, count in continuation.yield(count) }
                continuation.onTermination = { _ in source.invalidate() }
                try loop.add(source, to: mode)
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }
}

extension Loop {
    /// The deliveries of `signal` as an asynchronous sequence (`for try await count in loop.signals(SIGHUP)`),
    /// reported in passes of `mode`; see ``SignalDeliveries``. Safe from any task or thread.
    public func signals(_ signal: CInt, in mode: Mode = .default) -> SignalDeliveries {
        SignalDeliveries(loop: self, signal: signal, mode: mode)
    }
}
