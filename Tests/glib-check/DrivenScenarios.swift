import Dispatch
import Glibc
import RunLoopKit
import RunLoopKitGLib

/// RunLoopKit owns the main thread (`Loop.main.run()`) and drives GLib's default context: a GLib timeout, a GLib
/// child watch, a GIO asynchronous file read, main-queue work from another thread and `@MainActor` calls from a
/// detached task all run on the main thread, inside the loop's run.
func drivenScenario() {
    let glib: GLibCalls
    do { glib = try GLibCalls() } catch { fail("\(error)") }
    guard let gio = GIO() else { fail("libgio-2.0.so.0 is not installed (it ships with GLib's runtime package)") }
    let driver: GLibDriver
    do { driver = try Loop.main.driveGLib() } catch { fail("drive: \(error)") }

    let done = Shared<Set<String>>([])
    let offMain = Shared<[String]>([])
    @Sendable func finished(_ step: String) {
        if !onMainThread || Loop.main.currentMode == nil { offMain.withLock { $0.append(step) } }
        let count = done.withLock {
            $0.insert(step)
            return $0.count
        }
        if count == 5 { Loop.main.stop() }
    }

    // A GLib timeout, five ticks.
    let ticks = Shared(0)
    glib.addTimeout(nil, milliseconds: 10) {
        let tick = ticks.withLock {
            $0 += 1
            return $0
        }
        if tick == 5 { finished("timeout") }
        return tick < 5
    }

    // A child watch: a child that exits with status 3.
    var pid = pid_t()
    let words: [String] = ["/bin/sh", "-c", "exit 3"]
    let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { fail("posix_spawn failed") }
    argv.forEach { free($0) }
    let childStatus = Shared<Int32>(-1)
    glib.addChildWatch(nil, pid: pid) { status in
        childStatus.withLock { $0 = status }
        finished("child")
    }

    // A GIO asynchronous read: GIO reads on its worker threads and delivers the result in the calling thread's
    // default context, here driven by Loop.main.
    let path = "/tmp/runloopkit-glib-check-\(getpid())"
    let text = "read by GIO, delivered in Loop.main"
    guard let file = fopen(path, "w") else { fail("cannot write \(path)") }
    fputs(text, file)
    fclose(file)
    defer { unlink(path) }
    let contents = Shared("")
    final class Read: @unchecked Sendable {
        // Unchecked: touched on the main thread only (the call and its callback).
        let gio: GIO
        let finish: (String) -> Void
        init(_ gio: GIO, _ finish: @escaping (String) -> Void) {
            self.gio = gio
            self.finish = finish
        }
    }
    let gfile = gio.fileNewForPath(path)
    let context = Unmanaged.passRetained(
        Read(gio) { loaded in
            contents.withLock { $0 = loaded }
            finished("gio")
        }
    ).toOpaque()
    gio.loadContentsAsync(
        gfile, nil,
        { source, result, context in
            let read = Unmanaged<Read>.fromOpaque(context!).takeRetainedValue()
            var bytes: UnsafeMutablePointer<CChar>? = nil
            var length = 0
            let loaded = read.gio.loadContentsFinish(source, result, &bytes, &length, nil, nil) != 0
            let text = loaded && bytes != nil ? String(cString: bytes!) : "(failed)"
            read.gio.free(bytes)
            read.finish(text)
        }, context)

    // Main-queue work from another thread, and a main-actor call from a detached task.
    DispatchQueue.global().async {
        DispatchQueue.main.async { finished("main queue") }
    }
    Task.detached { await mainActorStep(finished) }

    // A deadline, so a lost wake-up fails rather than hangs.
    do {
        try Loop.main.schedule(after: .seconds(20)) { fail("not done in 20 s: \(done.value.sorted())") }
    } catch { fail("schedule: \(error)") }
    Loop.main.run()
    driver.invalidate()
    gio.objectUnref(gfile)

    check(offMain.value.isEmpty, "ran off the main thread or outside the loop's run: \(offMain.value)")
    check(childStatus.value >> 8 & 0xff == 3, "the child watch reported wait status \(childStatus.value)")
    check(contents.value == text, "GIO read \"\(contents.value)\"")
    pass("steps=\(done.value.count)")
}

/// A main-actor function, called from a detached task: it reports itself finished where it runs.
@MainActor func mainActorStep(_ finished: @Sendable (String) -> Void) {
    finished("main actor")
}

/// RunLoopKit owns the main thread and drives GLib's default context, which has a timeout a minute away and nothing
/// else: for a second the process uses under 1% of a CPU, and the loop does not wake up.
func idleDrivenScenario() {
    let glib: GLibCalls
    do { glib = try GLibCalls() } catch { fail("\(error)") }
    let driver: GLibDriver
    do { driver = try Loop.main.driveGLib() } catch { fail("drive: \(error)") }
    glib.addTimeout(nil, milliseconds: 60_000) { false }
    let wakeUps = Shared(0)
    let observer = LoopObserver(activities: .afterWaiting) { _, _ in wakeUps.withLock { $0 += 1 } }
    let window = Shared<(cpu: Int64, threadCPU: Int64, wakeUps: Int)>((0, 0, 0))
    do {
        try Loop.main.add(observer, to: .common)
        try Loop.main.schedule(after: .milliseconds(200)) {
            window.withLock { $0 = (processCPUNanoseconds(), threadCPUNanoseconds(), wakeUps.value) }
            try! Loop.main.schedule(after: .seconds(1)) {
                let (cpuBefore, threadCPUBefore, wakeUpsBefore) = window.value
                // This callback's own wake-up is the one expected.
                window.withLock {
                    $0 = (
                        processCPUNanoseconds() - cpuBefore, threadCPUNanoseconds() - threadCPUBefore,
                        wakeUps.value - wakeUpsBefore - 1
                    )
                }
                Loop.main.stop()
            }
        }
    } catch { fail("schedule: \(error)") }
    Loop.main.run()
    driver.invalidate()
    let (cpu, threadCPU, wakeUpsDuring) = window.value
    check(wakeUpsDuring == 0, "the idle loop woke up \(wakeUpsDuring) times in a second")
    let figures = checkIdleSecond(processCPU: cpu, threadCPU: threadCPU)
    pass("\(figures) wake_ups=\(wakeUpsDuring)")
}
