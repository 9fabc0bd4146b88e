import Dispatch
import RunLoopKit
import RunLoopKitGLib

/// GLib and `@MainActor` code sharing the main thread, both ways. First GLib owns it (`g_main_loop_run`, as `gtk_main`
/// and `g_application_run` do) with `Loop.main` attached to GLib's default context; then `Loop.main.run()` owns it
/// and drives that context. Each line says which thread its code ran on, and inside whose run. GLib is loaded at run
/// time: without it the scenario says so and is skipped.
enum GLibScenario {
    static func run() {
        let glib: GLibCalls
        do {
            glib = try GLibCalls()
        } catch {
            Trace.line("main", "skipped: \(error.message)")
            return
        }
        glibOwnsTheThread(glib)
        loopOwnsTheThread(glib)
    }

    /// `g_main_loop_run` on the main thread; `@MainActor` code and `DispatchQueue.main` work run in its iterations.
    static func glibOwnsTheThread(_ glib: GLibCalls) {
        let attachment: GLibAttachment
        do {
            attachment = try Loop.main.attachToGLib()
        } catch {
            Trace.line("main", "cannot attach Loop.main to GLib: \(error)")
            return
        }
        Trace.line("main", "Loop.main attached to GLib's default context; g_main_loop_run starts")
        let mainLoop = SharedPointer(glib.newMainLoop(nil))
        let ticks = TickCount()
        glib.addTimeout(nil, milliseconds: 40) {
            let tick = ticks.next()
            Trace.line(here(), "GLib timeout, tick \(tick)")
            return tick < 3
        }
        DispatchQueue.global().async {
            DispatchQueue.main.async { Trace.line(here(), "DispatchQueue.main work, queued from a Dispatch worker") }
        }
        Task { @MainActor in
            Trace.line(here(), "@MainActor task starts, inside g_main_loop_run")
            try? await Task.sleep(for: .milliseconds(150))
            Trace.line(here(), "@MainActor task resumes after Task.sleep and quits GLib's main loop")
            glib.quit(mainLoop.pointer)
        }
        glib.run(mainLoop.pointer)
        attachment.invalidate()
        glib.unref(mainLoop: mainLoop.pointer)
        Trace.line("main", "g_main_loop_run returned; Loop.main detached from GLib")
    }

    /// `Loop.main.run()` on the main thread; GLib's timeouts and idles run in its passes, next to `@MainActor` code.
    static func loopOwnsTheThread(_ glib: GLibCalls) {
        let driver: GLibDriver
        do {
            driver = try Loop.main.driveGLib()
        } catch {
            Trace.line("main", "cannot drive GLib from Loop.main: \(error)")
            return
        }
        Trace.line("main", "Loop.main drives GLib's default context; Loop.main.run starts")
        let ticks = TickCount()
        glib.addTimeout(nil, milliseconds: 40) {
            let tick = ticks.next()
            Trace.line(here(), "GLib timeout, tick \(tick), in mode \(Loop.main.currentMode?.name ?? "none")")
            return tick < 3
        }
        glib.addIdle(nil) {
            Trace.line(here(), "GLib idle, in Loop.main's run")
            return false
        }
        Task { @MainActor in
            Trace.line(here(), "@MainActor task starts, inside Loop.main's run")
            try? await Task.sleep(for: .milliseconds(150))
            Trace.line(here(), "@MainActor task resumes after Task.sleep and stops Loop.main")
            Loop.main.stop()
        }
        let result = Loop.main.run(in: .default, for: .seconds(10))
        driver.invalidate()
        Trace.line("main", "Loop.main.run returned \(result); GLib's context released")
    }

    /// Names the calling thread: the main thread, or another (one of Swift's or Dispatch's).
    static func here() -> String { Loop.main.isCurrent ? "main" : "other" }
}

/// A GLib pointer handed to closures: GLib's main loops may be quit from any thread.
private struct SharedPointer: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// A tick counter for callbacks that run on the main thread.
private final class TickCount: @unchecked Sendable {
    // Unchecked: only the main thread's GLib callbacks touch it.
    private var count = 0
    func next() -> Int {
        count += 1
        return count
    }
}
