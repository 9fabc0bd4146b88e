import Glibc
import RunLoopKit
import RunLoopKitSystem

/// Footprint (not one of the shared W1–W5): what one idle loop costs in descriptors and resident memory.
///
/// 1,000 threads are started one after another and parked on a gate; then 1,000 more, each of which first makes
/// its `Loop.current`, adds one source and runs one pass. The difference between the two groups' resident set sizes
/// (`VmRSS` in /proc/self/status), divided by 1,000, is the memory per loop, thread stacks cancelled out; the
/// descriptors the second group added, divided by 1,000, are the descriptors per loop. After both groups exit,
/// the descriptor count must be back where it started (each loop closes its descriptors when its thread exits).
final class FootprintBenchmark: Benchmark {
    static let name = "idle-loop-footprint"
    static let id = "F"
    static let title = "descriptors and resident bytes per idle loop"

    private let threadCount: Int

    init(scale: Int) {
        threadCount = 1_000 / scale
    }

    func setUp() {}

    func run() throws -> [Metric] {
        let descriptorsBefore = Self.openDescriptorCount()
        let rssBefore = Self.residentKilobytes()
        let plain = ParkedThreads(count: threadCount, makeLoop: false)
        let rssPlain = Self.residentKilobytes()
        let descriptorsPlain = Self.openDescriptorCount()
        let withLoops = ParkedThreads(count: threadCount, makeLoop: true)
        let rssLoops = Self.residentKilobytes()
        let descriptorsLoops = Self.openDescriptorCount()
        withLoops.release()
        plain.release()
        let descriptorsAfter = Self.openDescriptorCount()
        guard descriptorsAfter == descriptorsBefore else {
            throw BenchmarkFailure(
                "idle-loop-footprint: \(descriptorsAfter - descriptorsBefore) descriptors left open after exit")
        }
        let perThread = Double(rssPlain - rssBefore) * 1024 / Double(threadCount)
        let perLoop = Double((rssLoops - rssPlain) - (rssPlain - rssBefore)) * 1024 / Double(threadCount)
        return [
            Metric(
                "fds", unit: "per loop", key: "fds_per_loop",
                value: Double(descriptorsLoops - descriptorsPlain) / Double(threadCount), decimals: 2),
            Metric("rss", unit: "B/loop", key: "rss_bytes_per_loop", value: perLoop, decimals: 0),
            Metric("thread", unit: "B/thread", key: "rss_bytes_per_thread", value: perThread, decimals: 0),
        ]
    }

    func tearDown() {}

    /// Entries in /proc/self/fd.
    static func openDescriptorCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while readdir(directory) != nil { count += 1 }
        return count - 3  // ".", ".." and the directory's own descriptor.
    }

    /// The process's resident set size in kB (`VmRSS` in /proc/self/status).
    static func residentKilobytes() -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, CInt(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("VmRSS:") else { continue }
            return Int(text.dropFirst(6).filter(\.isNumber)) ?? 0
        }
        return 0
    }
}

/// Threads started one by one that wait on a gate; with `makeLoop`, each makes its loop before waiting.
private final class ParkedThreads {
    private let gate = WaitCounter()
    private var threads: [JoinableThread] = []

    init(count: Int, makeLoop: Bool) {
        let gate = gate
        for _ in 0..<count {
            let ready = WaitCounter()
            threads.append(
                JoinableThread {
                    if makeLoop { ParkedThreads.makeLoopAndRunOnce() }
                    ready.increment()
                    gate.wait()
                })
            ready.wait()
        }
    }

    /// Makes the thread's loop, gives it a source and runs one pass, so its lazily made buffers exist.
    private static func makeLoopAndRunOnce() {
        let loop = Loop.current
        try! loop.add(LoopSource(perform: { _ in }))
        loop.run(in: .default, for: .zero)
    }

    /// Opens the gate and joins every thread (their loops are torn down as they exit).
    func release() {
        gate.increment()
        for thread in threads { thread.join() }
    }
}
