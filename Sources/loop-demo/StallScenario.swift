import RunLoopKit

/// Main-thread hang detection: a watchdog thread sees the main loop busy, not asleep, for too long.
///
/// The monitor uses the usual hang detector's numbers: 5 checks in a row, 50 ms apart (threshold 250 ms). A 30 ms busy
/// timer goes unreported; a 300 ms one is reported while it is still going on.
enum StallScenario {
    static func run() {
        let loop = Loop.main
        let reports = Box<[StallMonitor.Report]>([])
        let monitor: StallMonitor
        do {
            monitor = try StallMonitor(loop: loop, threshold: .milliseconds(250), consecutiveChecks: 5) { report in
                Trace.line("watch", "reported: \(report)")
                reports.update { $0.append(report) }
            }
        } catch {
            Trace.line("main", "cannot start the monitor: \(error)")
            return
        }
        let short = try! LoopTimer(after: .milliseconds(10)) { _ in
            Trace.line("main", "timer: 30 ms of work (below the threshold)")
            busyWait(.milliseconds(30))
        }
        let stall = try! LoopTimer(after: .milliseconds(60)) { _ in
            Trace.line("main", "timer: 300 ms stall begins")
            busyWait(.milliseconds(300))
            Trace.line("main", "timer: stall ends")
        }
        let end = try! LoopTimer(after: .milliseconds(420)) { _ in loop.stop() }
        for timer in [short, stall, end] { try! loop.add(timer) }
        loop.run(in: .default, for: .seconds(5))
        monitor.stop()
        Trace.line("main", "monitor stopped; \(reports.value.count) stall reported")
    }
}
