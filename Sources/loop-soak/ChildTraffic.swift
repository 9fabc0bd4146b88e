import Glibc
import RunLoopKit
import Synchronization

/// `ChildExitSource`s: a driver thread spawns `/bin/true` children with `posix_spawn` and watches each with a
/// source on a hub (its pidfd in the hub's epoll set); one in six is invalidated from the driver's thread right after
/// it is added, and the driver then reaps that child itself.
///
/// Checks: each watched child is reported once, as `exited(0)`; an invalidated source is reported at most once (as
/// exited or reaped elsewhere); once the loop let go of a source, its pidfd is closed (the source is released).
final class ChildTraffic: Workload {
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, CInt) -> CInt

    /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module leaves out.
    private static let closeFrom: CloseFrom? = {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(address, to: CloseFrom.self)
    }()

    private let hubs: [Hub]
    private let seed: UInt64
    private let watched: Tally
    private let invalidated: Tally
    private let thread = Mutex<SoakThread?>(nil)

    /// Children watched on the hubs of `hubs`; `seed` drives the driver's choices.
    init(hubs: [Hub], seed: UInt64) {
        self.hubs = hubs
        self.seed = seed
        watched = Tallies.shared.make("child exits: watched", promise: "each reported once, exited(0)")
        invalidated = Tallies.shared.make("child exits: invalidated, reaped by the soak", promise: nil)
    }

    func start(_ control: RunControl) throws {
        let name = "children"
        control.register(name)
        thread.withLock {
            $0 = SoakThread(name: name) { [self] in
                var random = SplitMix64(seed: seed)
                while control.checkpoint(name) { round(&random) }
            }
        }
    }

    func join() {
        thread.withLock { $0 }?.join()
    }

    func tearDown() {}

    /// Spawns three children, watches each on a random hub and mode, invalidates some, then waits until every
    /// watched child was reported and every source released.
    private func round(_ random: inout SplitMix64) {
        var reports: [Counter] = []
        var released: [WeakReference<ChildExitSource>] = []
        for _ in 0..<3 {
            guard let pid = Self.spawnTrue() else { continue }
            let hub = hubs.randomElement(using: &random)!
            let mode = [Loop.Mode.default, .common].randomElement(using: &random)!
            let invalidate = random.oneIn(6)
            let count = Counter()
            let tally = invalidate ? invalidated : watched
            let source: ChildExitSource
            do {
                source = try ChildExitSource(pid: pid) { source, status in
                    count.add()
                    if count.count > 1 { Violations.shared.record("child exits: child \(source.pid) reported twice") }
                    if !invalidate && status != .exited(code: 0) {
                        Violations.shared.record("child exits: child \(source.pid) reported \(status)")
                    }
                    if !invalidate { tally.deliver() }
                }
                try hub.loop.add(source, to: mode)
            } catch {
                Violations.shared.record("child exits: watching child \(pid) threw \(error)")
                Self.reap(pid)
                continue
            }
            if invalidate {
                source.invalidate()
                Self.reap(pid)  // The source reaps only if its handler claimed the exit first; ECHILD then.
                invalidated.deliver()
            } else {
                watched.expect()
                reports.append(count)
            }
            released.append(WeakReference(source))
        }
        let deadline = Waiting.deadline(in: .seconds(30))
        if !Waiting.until(deadline, { reports.allSatisfy { $0.count == 1 } }) {
            Violations.shared.record(
                "child exits: \(reports.filter { $0.count == 0 }.count) exits not reported in 30 s")
        }
        if !Waiting.until(deadline, { released.allSatisfy(\.isReleased) }) {
            Violations.shared.record(
                "child exits: a source (and its pidfd) was still alive 30 s after its child exited")
        }
    }

    /// Starts `/bin/true` with no descriptor above 2 inherited; answers its pid.
    private static func spawnTrue() -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        _ = closeFrom?(&actions, 3)
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/bin/true", &actions, nil, arguments, environ)
        guard status == 0 else {
            Violations.shared.record("child exits: posix_spawn failed (\(status))")
            return nil
        }
        return pid
    }

    /// Waits for child `pid` and reaps it, unless a source already did (`ECHILD`).
    private static func reap(_ pid: pid_t) {
        var status: CInt = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }
}
