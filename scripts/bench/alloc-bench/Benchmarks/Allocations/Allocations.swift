import Benchmark
import Glibc
import RunLoopKit
import Synchronization

// Heap allocations per RunLoopKit operation, counted process-wide by package-benchmark's malloc interposer
// (`mallocCountTotal`), so the other loop's thread (its wake-up and pass) is counted too. Every benchmark does
// `operations` operations per iteration and the tool reports whole counts per iteration (its scaling factor would
// round per-operation counts down to whole numbers), so scripts/bench/alloc-bench.sh divides them by `operations`.
//
// Targets (the performance issue): 0 per signal, wake and pass; at most the closure's own context per perform;
// at most 1 per timer.

/// Operations per benchmark iteration; the counts printed are per iteration, so ÷ this is per operation.
let operations = 1_000

/// Work done on the other loop's thread, counted there; the benchmark thread waits for it by spinning (a wait
/// that allocates nothing and needs no wake-up of its own).
let performed = Atomic<Int>(0)

/// Spins until `performed` reaches `target` (yielding the CPU: the other loop's thread needs it on 2 CPUs).
func waitForPerformed(_ target: Int) {
    while performed.load(ordering: .acquiring) < target { sched_yield() }
}

var configuration: Benchmark.Configuration {
    Benchmark.Configuration(
        metrics: [.mallocCountTotal],
        warmupIterations: 3,
        maxDuration: .seconds(2),
        maxIterations: 50
    )
}

/// Registers a benchmark of `operations` calls of `operation` aimed at a loop on another thread (made in the
/// benchmark's set-up, shut down in its tear-down), each followed by a wait until that loop has performed it.
func benchmarkAgainstOtherLoop(_ name: String, _ operation: @escaping @Sendable (HostedLoop, Int) -> Void) {
    Benchmark(name, configuration: configuration) { benchmark in
        let host = hosted!
        for index in 0..<operations {
            let target = performed.load(ordering: .relaxed) + 1
            operation(host, index)
            waitForPerformed(target)
        }
    } setup: {
        hosted = HostedLoop()
    } teardown: {
        hosted?.shutDown()
        hosted = nil
    }
}

let benchmarks: @Sendable () -> Void = {
    // signal(): a source on another (sleeping) loop is signalled; its loop wakes, runs a pass and performs it.
    benchmarkAgainstOtherLoop("signal + wake + pass (other loop)") { host, _ in host.source.signal() }

    // perform(_:) from another thread with a block that captures nothing: what the library itself allocates.
    benchmarkAgainstOtherLoop("perform, capture-free block (other loop)") { host, _ in
        host.loop.perform { performed.add(1, ordering: .releasing) }
    }

    // perform(_:) with a block that captures two values (a reference and an Int): the closure's context is one
    // allocation by nature. (A block capturing a single class reference needs no context: Swift passes the
    // reference itself as the context.)
    benchmarkAgainstOtherLoop("perform, capturing block (other loop)") { host, index in
        let source = host.source
        host.loop.perform { if source.isValid { performed.add(1 + index & 0, ordering: .releasing) } }
    }

    // perform(_:) with a block that captures one class reference and nothing else: Swift passes the reference itself
    // as the closure's context, so the post allocates nothing.
    benchmarkAgainstOtherLoop("perform, block capturing one object (other loop)") { host, _ in
        let source = host.source
        host.loop.perform { if source.isValid { performed.add(1, ordering: .releasing) } }
    }

    // perform(with:_:) from another thread: a C function and one word, no closure context.
    benchmarkAgainstOtherLoop("perform(with:), function call (other loop)") { host, index in
        host.loop.perform(with: index) { _ in performed.add(1, ordering: .releasing) }
    }

    // A one-shot callback scheduled and cancelled on the loop's own thread (W4c's pair), capturing nothing.
    Benchmark("one-shot callback schedule + cancel (own loop)", configuration: configuration) { benchmark in
        let loop = Loop.current
        let deadline = Loop.Instant.now + .seconds(3600)
        for _ in 0..<operations {
            loop.cancel(try loop.schedule(at: deadline) { performed.add(1, ordering: .relaxed) })
        }
    }

    // LoopTimer(at:) + add + invalidate on the loop's own thread (W4's pair), with a handler that captures nothing.
    Benchmark("timer schedule + cancel (own loop)", configuration: configuration) { benchmark in
        let loop = Loop.current
        let deadline = Loop.Instant.now + .seconds(3600)
        for _ in 0..<operations {
            let timer = try LoopTimer(at: deadline) { _ in performed.add(1, ordering: .relaxed) }
            try loop.add(timer)
            timer.invalidate()
        }
    }

    // One pass of the thread's own loop driven by a signalled source (observers none, nothing else ready).
    Benchmark("pass with a signalled source (own loop)", configuration: configuration) { benchmark in
        let local = LocalLoop.forCurrentThread()
        for _ in 0..<operations {
            local.source.signal()
            local.loop.runPass()
        }
    }

    // An idle pass: run(in:for: .zero) on the thread's own loop, a source registered and nothing ready.
    Benchmark("idle pass, run(in:for: .zero) (own loop)", configuration: configuration) { benchmark in
        let local = LocalLoop.forCurrentThread()
        for _ in 0..<operations {
            local.loop.run(in: .default, for: .zero)
        }
    }
}

/// The loop of the thread running the cross-thread benchmarks, made in their set-up and shut down after them.
nonisolated(unsafe) var hosted: HostedLoop?

/// The benchmark thread's own loop with one registered source that counts its performs, made on first use by the
/// thread the benchmark closure runs on (the warm-up iterations absorb that first use).
///
/// Threading: made and used on the benchmark's thread.
final class LocalLoop: @unchecked Sendable {  // Unchecked: confined to the benchmark's thread.
    nonisolated(unsafe) private static var cached: LocalLoop?
    let loop = Loop.current
    let source = LoopSource { _ in performed.add(1, ordering: .relaxed) }

    private init() {
        try! loop.add(source)
    }

    /// The calling thread's loop with its source, made if the cached one belongs to another thread.
    static func forCurrentThread() -> LocalLoop {
        if let cached, cached.loop.isCurrent { return cached }
        let made = LocalLoop()
        cached = made
        return made
    }
}

/// A thread running its own loop in the default mode until shut down, with a source that counts its performs.
///
/// Threading: ``loop`` and ``source`` may be used from any thread; ``shutDown()`` once, from the creating thread.
final class HostedLoop: Sendable {
    let loop: Loop
    let source: LoopSource
    private let thread: pthread_t

    private final class Startup: @unchecked Sendable {  // Unchecked: `loop` is published through `ready`.
        var loop: Loop?
        let ready = Atomic<Bool>(false)
    }

    init() {
        let startup = Startup()
        let source = LoopSource { _ in performed.add(1, ordering: .releasing) }
        let body = Unmanaged.passRetained(
            Body {
                let loop = Loop.current
                try! loop.add(source)
                startup.loop = loop
                startup.ready.store(true, ordering: .releasing)
                while loop.run(in: .default, for: .seconds(3600)) != .stopped {}
                source.invalidate()
            })
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { pointer in
                Unmanaged<Body>.fromOpaque(pointer!).takeRetainedValue().run()
                return nil
            }, body.toOpaque())
        precondition(status == 0, "alloc-bench: pthread_create failed (\(status))")
        while !startup.ready.load(ordering: .acquiring) { sched_yield() }
        self.thread = thread
        self.loop = startup.loop!
        self.source = source
    }

    /// Stops the loop through a block (so the stop is not lost if the loop is not running yet) and joins the thread.
    func shutDown() {
        let loop = self.loop
        loop.perform { loop.stop() }
        pthread_join(thread, nil)
    }

    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
}
