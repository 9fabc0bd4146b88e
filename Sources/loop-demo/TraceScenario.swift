import RunLoopKit

/// Tracing a loop: an observer of every activity, in the common modes, while the loop switches modes.
///
/// "tracking" is made a common mode (as UITrackingRunLoopMode is), so the observer and a common timer follow the
/// loop into it; a timer added to the default mode only is silent while the loop tracks. Each switch is a run
/// ending (exit) and another starting (entry).
enum TraceScenario {
    static func run() {
        let loop = Loop.current
        let tracking: Loop.Mode = "tracking"
        loop.addCommonMode(tracking)

        let observer = LoopObserver(activities: .all) { _, activity in
            Trace.line("main", "\(Trace.pad(activity.description, -14)) mode \(loop.currentMode?.name ?? "-")")
        }
        try! loop.add(observer, to: .common)
        let commonTimer = try! LoopTimer(after: .milliseconds(20), repeating: .milliseconds(50)) { _ in
            Trace.line("main", "    timer in .common fired in \(loop.currentMode?.name ?? "-")")
        }
        try! loop.add(commonTimer, to: .common)
        let defaultTimer = try! LoopTimer(after: .milliseconds(35), repeating: .milliseconds(50)) { _ in
            Trace.line("main", "    timer in default only fired in \(loop.currentMode?.name ?? "-")")
        }
        try! loop.add(defaultTimer, to: .default)

        let plan: [(Loop.Mode, String)] = [
            (.default, "run default for 50 ms"),
            (tracking, "switch: the user scrolls, run tracking for 50 ms"),
            (.default, "switch back: run default for 50 ms"),
        ]
        for (mode, title) in plan {
            print("  -- \(title)")
            let result = loop.run(in: mode, for: .milliseconds(50))
            print("  -- run in \(mode) returned \(result)")
        }
        observer.invalidate()
        commonTimer.invalidate()
        defaultTimer.invalidate()
    }
}
