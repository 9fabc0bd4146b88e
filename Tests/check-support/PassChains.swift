// Work that only further passes of a loop can serve, for the scenarios that check a host's "run another pass" rules
// (glib-check's and foundation-check's pass-rules scenarios; issue 41).
import Glibc
import RunLoopKit
import Synchronization

/// Three chains of work made on the loop's own thread, each link of which only a later pass can serve: a block that
/// queues the next block, a ``LoopSource`` signalled again in its own perform (which runs in a later pass), and a
/// zero-delay ``LoopTimer`` whose handler adds the next. No link wakes the loop's descriptor: each pass that ends with
/// a link queued answers that more is ready, and only the host's "run another pass" rule serves it. Loop thread only,
/// except ``isDone`` and ``progress``.
public final class PassChains: Sendable {
    /// How many links each chain has.
    public let length: Int
    private let loop: Loop
    private let mode: Loop.Mode
    private let blocks = Atomic<Int>(0)
    private let signals = Atomic<Int>(0)
    private let timers = Atomic<Int>(0)
    private let startedAt = Atomic<Int64>(0)
    private let doneAt = Atomic<Int64>(0)
    private let source = Shared<LoopSource?>(nil)
    private let onDone: @Sendable () -> Void

    /// Chains of `length` links on `loop` in `mode`; `onDone` runs on the loop's thread once all three are complete.
    public init(
        loop: Loop, mode: Loop.Mode = .default, length: Int = 100, onDone: @escaping @Sendable () -> Void = {}
    ) {
        self.loop = loop
        self.mode = mode
        self.length = length
        self.onDone = onDone
    }

    /// Starts the three chains. On the loop's thread: from a host's callout between passes, or a loop handler.
    public func start() {
        check(loop.isCurrent, "PassChains.start() off the loop's thread")
        startedAt.store(nowNanoseconds(), ordering: .relaxed)
        queueBlock()
        let source = LoopSource { [self] source in
            if signals.add(1, ordering: .relaxed).newValue < length {
                source.signal()  // Signalled in its own perform: runs in a later pass.
            } else {
                source.invalidate()
                linkDone()
            }
        }
        self.source.withLock { $0 = source }
        do { try loop.add(source, to: mode) } catch { fail("adding the chain's source: \(error)") }
        source.signal()
        addTimer()
    }

    /// Whether all three chains are complete. Any thread.
    public var isDone: Bool { doneAt.load(ordering: .acquiring) != 0 }

    /// Milliseconds from ``start()`` to the last link, once done.
    public var milliseconds: Double {
        Double(doneAt.load(ordering: .acquiring) - startedAt.load(ordering: .relaxed)) / 1e6
    }

    /// How far each chain got, for a verdict. Any thread.
    public var progress: String {
        "blocks \(blocks.load(ordering: .relaxed))/\(length), source performs \(signals.load(ordering: .relaxed))/"
            + "\(length), zero-delay timers \(timers.load(ordering: .relaxed))/\(length)"
    }

    private func queueBlock() {
        let queued = loop.perform(in: mode) { [self] in
            if blocks.add(1, ordering: .relaxed).newValue < length { queueBlock() } else { linkDone() }
        }
        check(queued, "the loop refused a chain's block")
    }

    private func addTimer() {
        do {
            let timer = try LoopTimer(after: .zero) { [self] _ in
                if timers.add(1, ordering: .relaxed).newValue < length { addTimer() } else { linkDone() }
            }
            try loop.add(timer, to: mode)
        } catch {
            fail("adding a chain's timer: \(error)")
        }
    }

    /// One chain completed; the third completes the whole.
    private let completed = Atomic<Int>(0)
    private func linkDone() {
        guard completed.add(1, ordering: .relaxed).newValue == 3 else { return }
        doneAt.store(nowNanoseconds(), ordering: .releasing)
        onDone()
    }
}
