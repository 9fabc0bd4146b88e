import CRunLoopKitGLib
import Glibc
import RunLoopKit
import RunLoopKitGLib
import RunLoopKitSystem
import Synchronization

/// G1–G3, a signal from another thread to a handler on an idle thread, three ways, measured like W5: a sender wakes
/// every 200 µs on an absolute `clock_nanosleep` schedule, stamps `CLOCK_MONOTONIC` and sends; the handler records
/// now − stamp. 20,000 samples.
///
/// - G1, RunLoopKit alone: `LoopSource.signal()`; the target thread runs its loop (`run(in:for:)`).
/// - G2, RunLoopKit inside GLib: the same signal; the target thread runs `g_main_loop_run` with its loop attached
///   (``RunLoopKit/Loop/attachToGLib(context:mode:priority:)``): the loop's epoll set wakes GLib's `poll`, GLib
///   dispatches the attachment, which runs a pass.
/// - G3, GLib's own cross-thread call: `g_main_context_invoke_full` (an idle source attached from the sender's thread,
///   and GLib's wake-up eventfd written); the target thread runs `g_main_loop_run`.
///
/// A signal coalesces with one not yet performed (a source is performed once per signalled state), so the handler
/// of G1 and G2 takes every sample sent since its last call, each with its own stamp. Metrics as W5's: `p50`, `p99`,
/// `cpu` (process CPU time ÷ wall time) and `behind`; and `in_p50`, `in_p99`: from the return of the target's wait
/// (`epoll_wait` for G1, read by an `afterWaiting` observer; GLib's `poll` for G2 and G3, through a poll function
/// set with `g_main_context_set_poll_func`) to the handler, the user-space part of the latency, which the wake-up
/// itself (a VM's cross-CPU wake-up costs 3 to 10 µs from run to run) does not blur. scripts/bench/glib-latency.sh runs
/// the three alternately, each run in a fresh process, and prints medians over the runs.
///
/// GLib itself is called through RunLoopKitGLib's loader (``GLibFunctions``, package access): a context and a main
/// loop for the target thread, `g_main_context_invoke_full` (G3, and the quit), and the poll function.
enum GLibLatency {
    /// What the target thread runs, and how the sender reaches it.
    enum Way {
        case alone
        case embedded
        case glibInvoke
    }

    /// The samples, written by the target's thread, read by the main thread after ``done``.
    final class Samples: @unchecked Sendable {
        // Unchecked: `stamps[i]` is written by the sender before it publishes `sent` (release), read by the target
        // after loading `sent` (acquire); `latency` and `received` by the target only; `behind` by the sender only;
        // the main thread reads them after `done` and the sender's join.
        let stamps: UnsafeMutableBufferPointer<Int64>
        let latency: UnsafeMutableBufferPointer<Int64>
        /// From the return of the target's wait to the handler, per sample.
        let inside: UnsafeMutableBufferPointer<Int64>
        /// When the target's wait last returned; written and read on the target's thread.
        var wokeAt: Int64 = 0
        let sent = Atomic<Int>(0)
        var received = 0
        var behind = 0
        let done = WaitCounter()

        init(count: Int) {
            stamps = .allocate(capacity: count)
            stamps.initialize(repeating: 0)
            latency = .allocate(capacity: count)
            latency.initialize(repeating: 0)
            inside = .allocate(capacity: count)
            inside.initialize(repeating: 0)
        }

        func deallocate() {
            stamps.deallocate()
            latency.deallocate()
            inside.deallocate()
        }

        /// On the target's thread: takes every sample sent so far.
        func takeSent() {
            let now = Clock.monotonic()
            let sent = self.sent.load(ordering: .acquiring)
            while received < sent {
                latency[received] = now - stamps[received]
                inside[received] = now - wokeAt
                received += 1
            }
            if received == latency.count { done.increment() }
        }

        /// On the target's thread: sample `index` arrived on its own (G3).
        func take(_ index: Int) {
            let now = Clock.monotonic()
            latency[index] = now - stamps[index]
            inside[index] = now - wokeAt
            received += 1
            if received == latency.count { done.increment() }
        }
    }

    /// One run of one way: the target thread, the sender, and the samples.
    final class Run {
        private static let period: Int64 = 200_000
        let way: Way
        let count: Int
        private let glib: GLibFunctions
        private let samples: Samples
        private let gate = WaitCounter()
        private var target: JoinableThread?
        private var sender: JoinableThread?
        private var stopTarget: (() -> Void)?

        init(way: Way, scale: Int) throws {
            self.way = way
            count = 20_000 / scale
            do {
                glib = try GLibFunctions.shared()
            } catch {
                throw BenchmarkFailure("glib-latency: \(error)")
            }
            samples = Samples(count: count)
        }

        func setUp() {
            let samples = samples
            let send = startTarget()
            let gate = gate
            let count = count
            sender = JoinableThread {
                gate.wait()
                var next = Clock.monotonic()
                for index in 0..<count {
                    next += Self.period
                    let now = Clock.monotonic()
                    if now < next {
                        Clock.sleep(until: next)
                    } else {
                        samples.behind += 1
                        next += (now - next) / Self.period * Self.period
                    }
                    // The measured window: from this stamp to the handler's read of the clock.
                    samples.stamps[index] = Clock.monotonic()
                    send(index)
                }
            }
        }

        /// Starts the target thread for ``way``; answers how the sender sends sample `index`.
        private func startTarget() -> @Sendable (Int) -> Void {
            let samples = samples
            let glib = glib
            let ready = WaitCounter()
            switch way {
            case .alone:
                let source = LoopSource { _ in samples.takeSent() }
                let woke = LoopObserver(activities: .afterWaiting) { _, _ in samples.wokeAt = Clock.monotonic() }
                let host = LoopHost()
                let loop = host.loop
                try! loop.add(source)  // From this thread: applied before the host loop's next pass.
                try! loop.add(woke)
                stopTarget = {
                    source.invalidate()
                    woke.invalidate()
                    host.shutDown()
                }
                return { index in
                    samples.sent.store(index + 1, ordering: .releasing)
                    source.signal()
                }
            case .embedded:
                let source = LoopSource { _ in samples.takeSent() }
                let (context, mainLoop) = Self.newMainLoop(glib)
                Self.timeWaits(of: context, samples, glib)
                target = JoinableThread {
                    let loop = Loop.current
                    try! loop.add(source)
                    let attachment = try! loop.attachToGLib(context: context.pointer)
                    ready.increment()
                    glib.mainLoopRun(mainLoop.raw)
                    attachment.invalidate()
                    source.invalidate()
                }
                ready.wait()
                stopTarget = { Self.quit(mainLoop, of: context, glib) }
                return { index in
                    samples.sent.store(index + 1, ordering: .releasing)
                    source.signal()
                }
            case .glibInvoke:
                let (context, mainLoop) = Self.newMainLoop(glib)
                Self.timeWaits(of: context, samples, glib)
                target = JoinableThread {
                    ready.increment()
                    glib.mainLoopRun(mainLoop.raw)
                }
                ready.wait()
                stopTarget = { Self.quit(mainLoop, of: context, glib) }
                return { index in
                    glib.mainContextInvokeFull(
                        context.raw, 0, takeInvoked, UnsafeMutableRawPointer(bitPattern: index + 1), nil)
                }
            }
        }

        func run() throws -> [Metric] {
            let (wall, cpu) = try SampledRun.time(releasing: gate, until: samples.done, sender: &sender) {
                "glib-latency: \(samples.received) of \(count) samples arrived within 300 s"
            }
            let sorted = Array(samples.latency).sorted()
            let inside = Array(samples.inside).sorted()
            return Metric.latencyFigures(sorted: sorted, cpuNanoseconds: cpu, wallNanoseconds: wall) + [
                Metric(
                    "in_p50", unit: "µs", key: "in_p50_us",
                    value: Double(Percentile.nearestRank(50, of: inside)) / 1e3, decimals: 2),
                Metric(
                    "in_p99", unit: "µs", key: "in_p99_us",
                    value: Double(Percentile.nearestRank(99, of: inside)) / 1e3, decimals: 2),
                Metric("behind", unit: "sends", key: "behind", value: Double(samples.behind), decimals: 0),
            ]
        }

        func tearDown() {
            gate.increment()  // Lets the sender go if `run()` never did.
            sender?.join()
            stopTarget?()
            target?.join()
            samples.deallocate()
        }

        /// Makes `context` wait with ``timedPoll``, which notes in `samples` when each wait returns.
        private static func timeWaits(of context: GLibPointer, _ samples: Samples, _ glib: GLibFunctions) {
            _ = currentSamples.storeIfNil(samples)
            glib.mainContextSetPollFunc(context.raw, timedPoll)
        }

        /// A new context and a GLib main loop on it.
        private static func newMainLoop(_ glib: GLibFunctions) -> (context: GLibPointer, mainLoop: GLibPointer) {
            let context = glib.mainContextNew()!
            return (GLibPointer(context), GLibPointer(glib.mainLoopNew(context, 0)!))
        }

        /// Quits `mainLoop` from inside its own run, so a quit cannot come before the run starts.
        private static func quit(_ mainLoop: GLibPointer, of context: GLibPointer, _ glib: GLibFunctions) {
            glib.mainContextInvokeFull(context.raw, 0, quitMainLoop, mainLoop.raw, nil)
        }
    }
}

/// A GLib object pointer handed between threads (GLib's contexts and main loops are thread-safe).
struct GLibPointer: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
    init(_ raw: UnsafeMutableRawPointer) { self.raw = raw }
    var pointer: OpaquePointer { OpaquePointer(raw) }
}

/// The run's samples, for the C callbacks below, which GLib calls with nothing but a pointer: set once per process
/// (each run is a fresh process) before the target's thread starts.
private let currentSamples = AtomicLazyReference<GLibLatency.Samples>()

/// G3's callback on the target's thread: sample `index + 1` (GLib's user data) arrived.
private let takeInvoked: RLKGSourceFunc = { data in
    currentSamples.load()!.take(Int(bitPattern: data) - 1)
    return 0
}

/// GLib's wait for G2 and G3: `poll(2)`, as GLib's own, noting when it returned. A `GPollFD` has `struct pollfd`'s
/// layout (GLib's Unix build hands its records to `poll(2)` as they are).
private let timedPoll: RLKGPollFunc = { records, count, timeout in
    let ready = poll(UnsafeMutableRawPointer(records)?.assumingMemoryBound(to: pollfd.self), nfds_t(count), timeout)
    currentSamples.load()?.wokeAt = Clock.monotonic()
    return ready
}

/// Quits the GLib main loop given as user data.
private let quitMainLoop: RLKGSourceFunc = { data in
    try? GLibFunctions.shared().mainLoopQuit(data)
    return 0
}

/// G1–G3 share everything but the way the signal travels (``GLibLatency/Way``).
class GLibLatencyBenchmark: Benchmark {
    class var name: String { "glib-latency" }
    class var id: String { "G" }
    class var title: String { "signal → handler" }
    class var way: GLibLatency.Way { .alone }

    private let scale: Int
    private var current: GLibLatency.Run?

    required init(scale: Int) {
        self.scale = scale
    }

    func setUp() throws {
        let run = try GLibLatency.Run(way: Self.way, scale: scale)
        current = run
        run.setUp()
    }

    func run() throws -> [Metric] { try current!.run() }

    func tearDown() { current?.tearDown() }
}

/// G1: RunLoopKit alone.
final class GLibLatencyAloneBenchmark: GLibLatencyBenchmark {
    override class var name: String { "signal-latency" }
    override class var id: String { "G1" }
    override class var title: String { "LoopSource.signal → handler, RunLoopKit alone" }
    override class var way: GLibLatency.Way { .alone }
}

/// G2: RunLoopKit attached to a GLib main loop.
final class GLibLatencyEmbeddedBenchmark: GLibLatencyBenchmark {
    override class var name: String { "signal-latency-in-glib" }
    override class var id: String { "G2" }
    override class var title: String { "LoopSource.signal → handler, the loop inside g_main_loop_run" }
    override class var way: GLibLatency.Way { .embedded }
}

/// G3: GLib's own cross-thread call.
final class GLibLatencyInvokeBenchmark: GLibLatencyBenchmark {
    override class var name: String { "glib-invoke-latency" }
    override class var id: String { "G3" }
    override class var title: String { "g_main_context_invoke → callback, GLib alone" }
    override class var way: GLibLatency.Way { .glibInvoke }
}
