// A GTK 4 window on Loop.main, attached to GLib (`attachToGLib()`), in a real window under Xvfb: while a run of
// Loop.main's own is nested in GLib's dispatch (from a loop handler, and from a GLib callback as a "clicked" handler
// would run it), GTK's frame clock must keep ticking and GLib's timeouts keep firing; a label changed inside the
// nested run must be what the window shows afterwards. Prints "PASS gtk-check <figures>" and exits 0, or
// "FAIL gtk-check: <why>" and exits 1. Argument: where to save the window's picture (PNG).
import CGtk
import Glibc
import RunLoopKit
import RunLoopKitGLib

let picturePath = CommandLine.arguments.dropFirst().first ?? "gtk-check.png"

/// How long each nested run lasts, and the least that must happen in it (a 60 Hz frame clock ticks some 30 times,
/// a 10 ms GLib timeout fires some 50 times; a frozen GLib gives 0).
let nestedRun = Duration.milliseconds(500)
let leastFrames = 10
let leastTimeouts = 10

/// What the check counts; main thread only.
@MainActor final class Check {
    static let shared = Check()
    var frames = 0
    var timeouts = 0
    var window: UnsafeMutablePointer<GtkWidget>?
    var label: OpaquePointer?
    var figures: [String] = []
    var failures: [String] = []
}

func fail(_ why: String) -> Never {
    report("FAIL gtk-check: \(why)")
    exit(1)
}

/// Prints `line` at once (standard output may be a pipe).
func report(_ line: String) {
    print(line)
    fflush(nil)
}

/// Runs Loop.main for `nestedRun` where `place` says, changing the label halfway, and records what GTK and GLib did
/// meanwhile.
@MainActor func nestedRunOfTheLoop(_ place: String, label text: String) {
    let check = Check.shared
    let before = (check.frames, check.timeouts)
    let relabel = try! LoopTimer(after: nestedRun / 2) { _ in
        MainActor.assumeIsolated { gtk_label_set_text(check.label, text) }
    }
    try! Loop.main.add(relabel)
    let result = Loop.main.run(in: .default, for: nestedRun)
    let frames = check.frames - before.0
    let timeouts = check.timeouts - before.1
    check.figures.append("\(place): \(frames) frames, \(timeouts) GLib timeouts in \(nestedRun) (\(result))")
    if frames < leastFrames { check.failures.append("\(place): GTK's frame clock ticked \(frames) times") }
    if timeouts < leastTimeouts { check.failures.append("\(place): a 10 ms GLib timeout fired \(timeouts) times") }
}

/// Renders the window as GTK draws it into a PNG file.
@MainActor func savePicture(of widget: UnsafeMutablePointer<GtkWidget>, to path: String) -> Bool {
    let width = Double(gtk_widget_get_width(widget))
    let height = Double(gtk_widget_get_height(widget))
    guard width > 0, height > 0, let paintable = gtk_widget_paintable_new(widget) else { return false }
    defer { g_object_unref(UnsafeMutableRawPointer(paintable)) }
    let snapshot = gtk_snapshot_new()
    gdk_paintable_snapshot(paintable, snapshot, width, height)
    guard let node = gtk_snapshot_free_to_node(snapshot) else { return false }
    defer { gsk_render_node_unref(node) }
    guard let native = gtk_widget_get_native(widget), let renderer = gtk_native_get_renderer(native),
        let texture = gsk_renderer_render_texture(renderer, node, nil)
    else { return false }
    defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
    return gdk_texture_save_to_png(texture, path) != 0
}

/// The phases, one after the other, once the window is on screen and drawing.
@MainActor func runPhases() {
    // 1. From a handler of the loop (a LoopTimer's): the attachment's pass runs it.
    Loop.main.perform {
        MainActor.assumeIsolated { nestedRunOfTheLoop("from a loop handler", label: "drawn in a nested run") }
        // 2. From a GLib callback, as GTK's "clicked" handler would run it.
        let onIdle: @convention(c) (gpointer?) -> gboolean = { _ in
            MainActor.assumeIsolated {
                nestedRunOfTheLoop("from a GLib callback", label: "RunLoopKit: drawn while Loop.main ran")
                // Let GTK draw the final label, then take the picture and end.
                let onDrawn: @convention(c) (gpointer?) -> gboolean = { _ in
                    MainActor.assumeIsolated {
                        let check = Check.shared
                        let saved = savePicture(of: check.window!, to: picturePath)
                        if !saved { check.failures.append("the window's picture could not be saved") }
                        let shown = String(cString: gtk_label_get_text(check.label))
                        if shown != "RunLoopKit: drawn while Loop.main ran" {
                            check.failures.append("the label shows \"\(shown)\"")
                        }
                        if check.failures.isEmpty {
                            report("PASS gtk-check \(check.figures.joined(separator: "; ")); picture: \(picturePath)")
                        } else {
                            report("FAIL gtk-check: \(check.failures.joined(separator: "; "))")
                        }
                        exit(check.failures.isEmpty ? 0 : 1)
                    }
                }
                g_timeout_add(200, onDrawn, nil)
            }
            return 0  // G_SOURCE_REMOVE
        }
        g_idle_add(onIdle, nil)
    }
}

@MainActor func activate(_ application: UnsafeMutablePointer<GtkApplication>) {
    let check = Check.shared
    let window = gtk_application_window_new(application)!
    check.window = window
    let windowPointer = UnsafeMutablePointer<GtkWindow>(OpaquePointer(window))
    gtk_window_set_default_size(windowPointer, 360, 120)
    let label = gtk_label_new("waiting")!
    check.label = OpaquePointer(label)
    gtk_window_set_child(windowPointer, label)
    // The frame clock: a tick callback keeps it running, one tick per frame GTK draws.
    let onTick: @convention(c) (UnsafeMutablePointer<GtkWidget>?, OpaquePointer?, gpointer?) -> gboolean = {
        _, _, _ in
        MainActor.assumeIsolated { Check.shared.frames += 1 }
        return 1  // G_SOURCE_CONTINUE
    }
    gtk_widget_add_tick_callback(label, onTick, nil, nil)
    let onTimeout: @convention(c) (gpointer?) -> gboolean = { _ in
        MainActor.assumeIsolated { Check.shared.timeouts += 1 }
        return 1
    }
    g_timeout_add(10, onTimeout, nil)
    gtk_window_present(windowPointer)
    // Start once GTK has drawn a few frames.
    let start = try! LoopTimer(after: .milliseconds(20), repeating: .milliseconds(20)) { timer in
        MainActor.assumeIsolated {
            guard Check.shared.frames >= 5 else { return }
            timer.invalidate()
            runPhases()
        }
    }
    try! Loop.main.add(start)
}

let onDeadline: @convention(c) (gpointer?) -> gboolean = { _ in fail("no result within 30 s") }
g_timeout_add(30_000, onDeadline, nil)

try Loop.main.attachToGLib()
let application = gtk_application_new("org.runloopkit.GtkCheck", G_APPLICATION_NON_UNIQUE)
let onActivate: @convention(c) (UnsafeMutablePointer<GtkApplication>?, gpointer?) -> Void = { application, _ in
    MainActor.assumeIsolated { activate(application!) }
}
g_signal_connect_data(application, "activate", unsafeBitCast(onActivate, to: GCallback.self), nil, nil, G_CONNECT_DEFAULT)
// Only the program's name: the picture's path is not a file for the application to open.
exit(g_application_run(UnsafeMutablePointer(OpaquePointer(application)), 1, CommandLine.unsafeArgv))
