import RunLoopKit

/// The run-loop task dispatcher (CFRunLoopObserver task dispatch on Apple platforms). An event handler schedules three
/// tasks, for the end of the current pass, the beginning of the next pass and idle time, in the reverse of the order
/// they will run.
enum PhasesScenario {
    static func run() {
        let loop = Loop.current
        let scheduler: PhaseTaskScheduler
        do {
            scheduler = try PhaseTaskScheduler(loop: loop)
        } catch {
            Trace.line("main", "cannot create the scheduler: \(error)")
            return
        }
        let ran = Box<[String]>([])
        let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting, .exit], order: 0) { _, activity in
            Trace.line("main", "  (\(activity))")
        }
        try! loop.add(observer)

        let event = try! LoopTimer(after: .milliseconds(5)) { _ in
            Trace.line("main", "event: schedule idle, nextPassBegins, currentPassEnds tasks")
            for phase in [LoopPhase.idle, .nextPassBegins, .currentPassEnds] {
                scheduler.schedule(at: phase) {
                    Trace.line("main", "task for \(phase) runs")
                    ran.update { $0.append(phase.description) }
                }
            }
        }
        try! loop.add(event)
        let end = try! LoopTimer(after: .milliseconds(30)) { _ in loop.stop() }
        try! loop.add(end)

        loop.run(in: .default, for: .seconds(5))
        Trace.line("main", "ran in this order: \(ran.value.joined(separator: ", "))")
        observer.invalidate()
        end.invalidate()
        scheduler.invalidate()
    }
}
