import RunLoopKitSystem
import Synchronization

/// Busy threads competing with the soak for the CPUs, as `stress --cpu K` does: each spins at normal priority
/// until stopped, so the soak's threads are preempted, wake late and run in shorter slices.
final class CPULoad: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let spins = Atomic<Int>(0)
    private let threads = Mutex<[JoinableThread]>([])

    /// Starts `count` spinning threads.
    init(threads count: Int) {
        for index in 0..<count {
            let thread = JoinableThread(name: "load-\(index)") { [self] in
                var local = 0
                while !stopping.load(ordering: .relaxed) {
                    local &+= 1
                    if local & 0xFFFFF == 0 { spins.add(1, ordering: .relaxed) }
                }
            }
            threads.withLock { $0.append(thread) }
        }
    }

    /// Stops and joins the spinning threads.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        for thread in threads.withLock({ $0 }) { thread.join() }
    }

    /// Millions (2^20) of spins so far, all threads together: shows the load really ran.
    var megaSpins: Int { spins.load(ordering: .relaxed) }
}
