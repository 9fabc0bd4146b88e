import Glibc
import RunLoopKit
import RunLoopKitServices
import SplitMix64
import Synchronization

/// `ChildExitSource`s: a driver thread spawns `/bin/true` children with `posix_spawn` and watches each with a
/// source on a hub (its pidfd in the hub's epoll set); one in six is invalidated from the driver's thread right after
/// it is added, and the driver then reaps that child itself.
///
/// Checks: each watched child is reported once, as `exited(0)`, within ``Limits/delivery`` of its exit; an
/// invalidated source is reported at most once (as exited or reaped elsewhere); once the loop let go of a source, its
/// pidfd is closed (the source is released).
///
/// The limit counts from the child's exit, not from its spawn: on an overloaded VM the kernel's RCU thread can be
/// starved for a minute (see ``Limits``), and a `/bin/true` waiting on it in `mmap` stays "running" that long. Such
/// children are counted and described on standard error, not failed, as long as they exit within
/// ``Limits/childExit``.
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
    private let slow: Tally
    /// How many slow children were described on standard error (the first three are).
    private let slowDescribed = Counter()
    private let driver = DriverThread()

    /// Children watched on the hubs of `hubs`; `seed` drives the driver's choices.
    init(hubs: [Hub], seed: UInt64) {
        self.hubs = hubs
        self.seed = seed
        watched = Tallies.shared.make("child exits: watched", promise: "each reported once, exited(0)")
        invalidated = Tallies.shared.make("child exits: invalidated, reaped by the soak", promise: nil)
        slow = Tallies.shared.make("child exits: still running 30 s after spawn", promise: nil)
    }

    func start(_ control: RunControl) throws {
        driver.start("children", control: control, seed: seed) { [self] _, random in round(&random) }
    }

    func join() {
        driver.join()
    }

    func tearDown() {}

    /// Spawns three children, watches each on a random hub and mode, invalidates some, then waits until every
    /// watched child was reported and every source released.
    private func round(_ random: inout SplitMix64) {
        var reports: [(count: Counter, pid: pid_t, hub: Hub, mode: Loop.Mode)] = []
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
                reports.append((count, pid, hub, mode))
            }
            released.append(WeakReference(source))
        }
        waitForReports(reports)
        if !Waiting.until(Waiting.deadline(in: Limits.delivery), { released.allSatisfy(\.isReleased) }) {
            Violations.shared.record(
                "child exits: a source (and its pidfd) was still alive \(Limits.deliverySeconds) s after its child's exit was reported"
            )
        }
    }

    /// Waits until every watched child was reported; a child that exited (a zombie, or reaped by its source) and
    /// was not reported within ``Limits/delivery`` is a violation, and so is one still running after ``Limits/childExit``.
    private func waitForReports(_ reports: [(count: Counter, pid: pid_t, hub: Hub, mode: Loop.Mode)]) {
        let spawned = Loop.Instant.now
        var exitedAt: [Int: Loop.Instant] = [:]
        var late: Set<Int> = []
        var described = false
        Waiting.until(spawned + Limits.childExit) {
            if !described && Loop.Instant.now - spawned > .seconds(30) {
                described = true
                let running = reports.indices.filter { reports[$0].count.count == 0 && exitedAt[$0] == nil }
                slow.deliver(running.count)
                describeSlowChildren(running.map { reports[$0] })
            }
            var waiting = false
            for (index, report) in reports.enumerated() where report.count.count == 0 {
                waiting = true
                if exitedAt[index] == nil && ChildDiagnosis.hasExited(report.pid) { exitedAt[index] = .now }
                if let exit = exitedAt[index], Loop.Instant.now - exit > Limits.delivery { late.insert(index) }
            }
            return !waiting || !late.isEmpty
        }
        for (index, report) in reports.enumerated() where report.count.count == 0 {
            let what: String
            if late.contains(index) {
                what = "exited and was not reported within \(Limits.deliverySeconds) s"
            } else if exitedAt[index] == nil {
                what = "did not exit within \(Limits.childExit) (see dmesg: kernel threads starved?)"
            } else {
                what = "was not reported before the wait for the others ended"
            }
            Violations.shared.record(
                "child exits: a child \(what); "
                    + ChildDiagnosis.describe(pid: report.pid, hub: report.hub, mode: report.mode))
        }
    }

    /// Tells on standard error (the first three times) what children still running 30 s after their spawn are
    /// doing: a note, not a violation, unless they then exit and go unreported.
    private func describeSlowChildren(_ reports: [(count: Counter, pid: pid_t, hub: Hub, mode: Loop.Mode)]) {
        for report in reports {
            guard slowDescribed.count < 3 else { return }
            slowDescribed.add()
            StandardError.print(
                "loop-soak: note: a child still running 30 s after its spawn; "
                    + ChildDiagnosis.describe(pid: report.pid, hub: report.hub, mode: report.mode))
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

    /// Waits for child `pid` and reaps it, unless a source already did (`ECHILD`); one still running after
    /// ``Limits/childExit`` is a violation (and left alone).
    private static func reap(_ pid: pid_t) {
        var status: CInt = 0
        let reaped = Waiting.until(Waiting.deadline(in: Limits.childExit)) {
            let result = waitpid(pid, &status, WNOHANG)
            return result == pid || (result == -1 && errno == ECHILD)
        }
        if !reaped {
            Violations.shared.record("child exits: invalidated child \(pid) did not exit within \(Limits.childExit)")
        }
    }
}
