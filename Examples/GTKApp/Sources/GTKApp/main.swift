// GTK and RunLoopKit sharing the main thread: GTK runs it (`g_application_run`), and `Loop.main`, attached to GLib's
// main context, runs inside GTK's iterations. A loop timer keeps a clock in the window current; a button sends a
// count of primes to a worker `LoopThread`, whose answer comes back to `Loop.main` and into the window.
//
// Usage: GTKApp [seconds]. Given a number of seconds, the window closes itself after that long (what CI runs).
import CGtk
import Glibc
import RunLoopKit
import RunLoopKitGLib

/// The window: a clock that a loop timer ticks, and a button whose work runs on a worker thread.
///
/// Main thread only: GTK's calls and `Loop.main`'s handlers both run there.
@MainActor final class PrimesWindow {
    /// How far the worker counts primes: long enough to see the clock keep ticking meanwhile.
    nonisolated static let primeLimit = 5_000_000

    private let window: UnsafeMutablePointer<GtkWindow>
    private let clock: OpaquePointer  // A GtkLabel.
    private let answer: OpaquePointer  // A GtkLabel.
    private let button: UnsafeMutablePointer<GtkWidget>
    private let worker: LoopThread
    private let opened = ContinuousClock.now
    private var timer: LoopTimer?
    private var isOpen = true
    /// How many times the timer updated the clock, and the worker answered.
    private(set) var ticks = 0, answers = 0

    /// Opens the window on `application`; its counts run on `worker`.
    init(application: UnsafeMutablePointer<GtkApplication>, worker: LoopThread) {
        self.worker = worker
        window = UnsafeMutablePointer(OpaquePointer(gtk_application_window_new(application)))
        gtk_window_set_title(window, "RunLoopKit and GTK")
        gtk_window_set_default_size(window, 420, 180)
        clock = OpaquePointer(gtk_label_new(nil))
        answer = OpaquePointer(gtk_label_new("Press the button to count primes on a worker thread."))
        button = gtk_button_new_with_label("Count primes")
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 18)!
        for widget in [UnsafeMutablePointer(clock), UnsafeMutablePointer(answer), button] {
            gtk_box_append(UnsafeMutablePointer(OpaquePointer(box)), widget)
        }
        gtk_widget_set_valign(box, GTK_ALIGN_CENTER)
        gtk_widget_set_halign(button, GTK_ALIGN_CENTER)
        gtk_widget_add_css_class(UnsafeMutablePointer(clock), "title-1")
        gtk_window_set_child(window, box)
        // GTK's signals reach this object through their data pointer: main keeps it while the window is open.
        let me = Unmanaged.passUnretained(self).toOpaque()
        let onClicked: @convention(c) (gpointer?, gpointer?) -> Void = { _, me in
            MainActor.assumeIsolated { Unmanaged<PrimesWindow>.fromOpaque(me!).takeUnretainedValue().countPrimes() }
        }
        let onDestroy: @convention(c) (gpointer?, gpointer?) -> Void = { _, me in
            MainActor.assumeIsolated { Unmanaged<PrimesWindow>.fromOpaque(me!).takeUnretainedValue().closed() }
        }
        g_signal_connect_data(
            button, "clicked", unsafeBitCast(onClicked, to: GCallback.self), me, nil, G_CONNECT_DEFAULT)
        g_signal_connect_data(
            window, "destroy", unsafeBitCast(onDestroy, to: GCallback.self), me, nil, G_CONNECT_DEFAULT)
        gtk_window_present(window)
    }

    /// Starts the clock, a repeating timer of `Loop.main` (which runs inside GTK's iterations), and closes the
    /// window after `lifetime` if one is given, as its close button does.
    func startClock(closingAfter lifetime: Duration?) throws {
        let timer = try LoopTimer(after: .zero, repeating: .milliseconds(100)) { [weak self] _ in
            MainActor.assumeIsolated { self?.tick() }
        }
        try Loop.main.add(timer)
        self.timer = timer
        guard let lifetime else { return }
        try Loop.main.schedule(after: lifetime) { [weak self] in MainActor.assumeIsolated { self?.close() } }
    }

    /// The window's "destroy": its widgets are gone, so the clock stops and a late answer is not shown.
    private func closed() {
        isOpen = false
        timer?.invalidate()
        timer = nil
    }

    /// Closes the window, as its close button does; `g_application_run` returns once it is gone.
    func close() { gtk_window_close(window) }

    private func tick() {
        ticks += 1
        let tenths = opened.duration(to: .now) / .milliseconds(100)
        let text = "Open for \(Int(tenths) / 10).\(Int(tenths) % 10) s"
        gtk_label_set_text(clock, text)
        if ticks % 10 == 0 { print("tick \(ticks): \(text)") }
    }

    /// The button's handler: counts on the worker thread, and shows the answer back on the main thread.
    func countPrimes() {
        gtk_widget_set_sensitive(button, 0)  // One count at a time.
        gtk_label_set_text(answer, "Counting on the worker…")
        let started = ContinuousClock.now
        worker.perform {  // On the worker: the window stays live meanwhile.
            let count = primes(below: Self.primeLimit)
            Loop.main.perform {  // Back on the main thread, in one of GTK's iterations.
                MainActor.assumeIsolated { self.show(count, after: started.duration(to: .now)) }
            }
        }
    }

    private func show(_ count: Int, after elapsed: Duration) {
        guard isOpen else { return }
        answers += 1
        let text = "\(count) primes below \(Self.primeLimit), counted in \(Int(elapsed / .milliseconds(1))) ms"
        print("answer \(answers): \(text)")
        gtk_label_set_text(answer, text)
        gtk_widget_set_sensitive(button, 1)
    }
}

/// The number of primes below `limit`, by the sieve of Eratosthenes: the slow work, for any thread.
func primes(below limit: Int) -> Int {
    var composite = [Bool](repeating: false, count: limit)
    var count = 0
    for number in 2..<limit where !composite[number] {
        count += 1
        for multiple in stride(from: number * number, to: limit, by: number) { composite[multiple] = true }
    }
    return count
}

let closeAfter = CommandLine.arguments.dropFirst().first.flatMap(Double.init).map { Duration.seconds($0) }
let attachment = try Loop.main.attachToGLib()  // From here on, Loop.main runs inside GTK's iterations.
let worker = try LoopThread(name: "primes")
var primesWindow: PrimesWindow?

// NON_UNIQUE: each launch is a process of its own, with its own window.
let application = gtk_application_new("org.example.RunLoopKitGTKApp", G_APPLICATION_NON_UNIQUE)
let onActivate: @convention(c) (UnsafeMutablePointer<GtkApplication>?, gpointer?) -> Void = { application, _ in
    MainActor.assumeIsolated {
        let window = PrimesWindow(application: application!, worker: worker)
        primesWindow = window
        do {
            try window.startClock(closingAfter: closeAfter)
            window.countPrimes()  // A first count at once; the button starts more.
        } catch {
            print("cannot start the clock: \(error)")
            window.close()
        }
    }
}
g_signal_connect_data(
    application, "activate", unsafeBitCast(onActivate, to: GCallback.self), nil, nil, G_CONNECT_DEFAULT)
// Only the program's name: the seconds are not a file for GTK to open. Returns when the last window has closed.
let status = g_application_run(UnsafeMutablePointer(OpaquePointer(application)), 1, CommandLine.unsafeArgv)

// The window is gone (its clock stopped with it): stop the worker (a count under way finishes first), then detach.
worker.stop()
attachment.invalidate()
g_object_unref(UnsafeMutableRawPointer(application))
print("closed: clock ticks \(primesWindow?.ticks ?? 0), worker answers \(primesWindow?.answers ?? 0)")
exit(status)
