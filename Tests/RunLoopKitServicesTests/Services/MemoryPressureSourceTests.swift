import Glibc
import RunLoopKit
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKitServices

/// Memory-pressure sources: triggers parsed and checked, the pressure file found, a trigger armed on this machine's
/// kernel and its source added and invalidated, the file going away (a cgroup removed), the averages, and the
/// refusals as typed errors. Whether pressure itself fires a source is not tested: inducing memory stalls would
/// harm a shared machine (see FSWATCH-HANDOFF.md).
@Suite(.serialized) struct MemoryPressureSourceTests {
    private func code(_ body: () throws -> Void) -> LoopError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? LoopError)?.code
        }
    }

    @Test func triggersAreParsedInTheKernelsFormOrWithUnits() throws {
        let kernel = try MemoryPressureTrigger(parsing: "some 150000 2000000")
        let units = try MemoryPressureTrigger(parsing: "some 150ms 2s")
        #expect(kernel == units)
        #expect(kernel.stall == .some && kernel.threshold == .milliseconds(150) && kernel.window == .seconds(2))
        #expect(kernel.description == "some 150000 2000000")
        let full = try MemoryPressureTrigger(.full, threshold: .microseconds(50), window: .milliseconds(500))
        #expect(full.description == "full 50 500000" && !full.isAllowedUnprivileged)
        #expect(try MemoryPressureTrigger(parsing: "full 1s 10s").isAllowedUnprivileged)
    }

    @Test func triggersTheKernelWouldRefuseAreInvalidArguments() {
        for text in [
            "", "some", "most 150ms 2s", "some 150ms", "some 150ms 2s extra", "some x 2s", "some 150ms 2h",
            "some 0 2s", "some 3s 2s", "some 150ms 400ms", "some 150ms 11s", "some -1 2s",
        ] {
            #expect(code { _ = try MemoryPressureTrigger(parsing: text) } == .invalidArgument, "\(text)")
        }
        #expect(
            code { _ = try MemoryPressureTrigger(.some, threshold: .nanoseconds(1500), window: .seconds(2)) }
                == .invalidArgument)
    }

    @Test func thePressureFileIsTheCgroupsWhenItHasOne() {
        let membership = "12:memory:/legacy\n0::/system.slice/my.service\n"
        #expect(MemoryPressureFile.unifiedGroup(in: membership) == "/system.slice/my.service")
        #expect(MemoryPressureFile.unifiedGroup(in: "0::/gone (deleted)\n") == nil)
        #expect(MemoryPressureFile.unifiedGroup(in: "4:memory:/x\n") == nil)
        let hybrid = """
            35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
            """
        #expect(MemoryPressureFile.cgroup2Mount(in: hybrid)?.point == "/sys/fs/cgroup/unified")
        let escaped = "41 31 0:38 /base /mnt/cgroup\\040two rw - cgroup2 cgroup2 rw"
        #expect(MemoryPressureFile.cgroup2Mount(in: escaped)?.point == "/mnt/cgroup two")
        #expect(MemoryPressureFile.cgroup2Mount(in: escaped)?.root == "/base")
        #expect(MemoryPressureFile.cgroup2Mount(in: "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw") == nil)

        // This machine: the preferred file is the cgroup's when it exists, else the system's.
        let cgroup = MemoryPressureFile.cgroupPath()
        let preferred = MemoryPressureFile.preferredPath()
        if let cgroup, access(cgroup, F_OK) == 0 {
            #expect(preferred == cgroup)
        } else {
            #expect(preferred == (access("/proc/pressure/memory", F_OK) == 0 ? "/proc/pressure/memory" : nil))
        }
        TestFigures.report("[psi] cgroup file \(cgroup ?? "none"), preferred \(preferred ?? "none (no PSI)")")
    }

    @Test func theAveragesAreRead() throws {
        let sample = """
            some avg10=1.50 avg60=0.25 avg300=0.00 total=123456
            full avg10=0.00 avg60=0.00 avg300=0.00 total=789
            """
        let parsed = try #require(MemoryPressureAverages(parsing: sample))
        #expect(
            parsed.some.average10 == 1.5 && parsed.some.average60 == 0.25 && parsed.some.total == .microseconds(123456))
        #expect(parsed.full.total == .microseconds(789))
        #expect(MemoryPressureAverages(parsing: "some avg10=x") == nil)
        #expect(code { _ = try MemoryPressureAverages.read(from: "/proc/pressure/nothing-here") } == .unsupported)
        guard MemoryPressureFile.preferredPath() != nil else { return }
        let averages = try MemoryPressureAverages.read()
        #expect(averages.some.average10 >= 0 && averages.some.average10 <= 100)
        #expect(averages.some.total >= averages.full.total)
    }

    @Test func aMissingPressureFileIsUnsupported() {
        let trigger = try! MemoryPressureTrigger(parsing: "some 150ms 2s")
        let thrown = Box<LoopError>()
        do {
            _ = try MemoryPressureSource(trigger: trigger, path: "/proc/pressure/nothing-here") { _, _ in }
        } catch {
            thrown.value = error
        }
        #expect(thrown.value?.code == .unsupported && thrown.value?.errno == ENOENT)
        #expect(thrown.value?.message.contains("/proc/pressure/nothing-here") == true)
    }

    /// On this machine's kernel: a trigger with a 2 s window is armed (any process may, from Linux 6.4 on), its
    /// source added, registered in the loop and invalidated, which closes the pressure file.
    @Test func aTriggerIsArmedAddedAndInvalidated() throws {
        guard let path = MemoryPressureFile.preferredPath() else {
            #expect(code { _ = try MemoryPressureSource.defaultPath() } == .unsupported)
            return
        }
        let trigger = try MemoryPressureTrigger(parsing: "some 150ms 2s")
        let source = try MemoryPressureSource(trigger: trigger) { _, _ in }
        #expect(source.path == path && source.isValid)
        let running = ItemsSupport.startRunningLoop()
        try running.loop.add(source)
        #expect(waitUntil { running.loop.contains(source) })
        let descriptor = try #require(source.pressureDescriptor)
        #expect(FaultInjection.openDescriptors[descriptor] == "open")
        source.invalidate()
        #expect(source.pressureDescriptor == nil)
        // Closed by the invalidation: no handler call held it.
        #expect(waitUntil { FaultInjection.openDescriptors[descriptor] == nil })
        #expect(!source.isValid)
        // From this thread `contains` is a snapshot the loop updates when it applies the invalidation.
        #expect(waitUntil { !running.loop.contains(source) })
        #expect(code { try running.loop.add(source) } == .invalidated)
        running.finish()
        TestFigures.report("[psi] armed \"\(trigger)\" on \(path)")
    }

    /// A window that is not a multiple of 2 s: armed with `CAP_SYS_RESOURCE`, refused as `permissionDenied`
    /// without it (this machine's root lacks it when run in a container).
    @Test func aShortWindowNeedsTheCapability() throws {
        guard MemoryPressureFile.preferredPath() != nil else { return }
        let trigger = try MemoryPressureTrigger(parsing: "some 100ms 1s")
        var outcome = "armed"
        do {
            let source = try MemoryPressureSource(trigger: trigger) { _, _ in }
            source.invalidate()
        } catch {
            #expect(error.code == .permissionDenied && error.errno == EINVAL, "\(error)")
            #expect(error.message.contains("CAP_SYS_RESOURCE"))
            outcome = "refused: \(error.code)"
        }
        TestFigures.report("[psi] \"\(trigger)\" (1 s window): \(outcome)")
    }

    /// A cgroup's pressure file goes away with its cgroup: the handler hears `fileRemoved` once and the source is
    /// invalid. Needs a writable cgroup2 hierarchy (root, or a delegated subtree); skipped otherwise.
    @Test func aRemovedCgroupEndsItsSource() throws {
        guard let mount = try? FileDescriptorCalls.contents(of: "/proc/self/mountinfo"),
            let point = MemoryPressureFile.cgroup2Mount(in: String(decoding: mount, as: UTF8.self))?.point
        else { return }
        let group = "\(point)/runloopkit-psi-\(getpid())"
        guard mkdir(group, 0o755) == 0 else {
            TestFigures.report("[psi] no writable cgroup2 hierarchy (mkdir: errno \(errno)): removal not exercised")
            return
        }
        defer { rmdir(group) }
        let events = Recorder<MemoryPressureSource.Event>()
        let trigger = try MemoryPressureTrigger(parsing: "some 150ms 2s")
        let source: MemoryPressureSource
        do {
            source = try MemoryPressureSource(trigger: trigger, path: group + "/memory.pressure") { source, event in
                events.append(event)
                #expect(!source.isValid)
            }
        } catch {
            TestFigures.report("[psi] a child cgroup's memory.pressure refused a trigger: \(error)")
            return
        }
        let running = ItemsSupport.startRunningLoop()
        try running.loop.add(source)
        #expect(waitUntil { running.loop.isWaiting })
        #expect(rmdir(group) == 0, "rmdir: errno \(errno)")
        #expect(waitUntil { events.count > 0 })
        running.loop.perform {}
        #expect(waitUntil { running.loop.isWaiting })
        running.finish()
        #expect(events.all == [.fileRemoved])
        #expect(!source.isValid)
        TestFigures.report("[psi] a removed cgroup's source heard \(events.all)")
    }
}

extension MemoryPressureSourceTests {
    /// A daemon's pressure watcher should not keep a run going on its own.
    @Test func aSourceThatDoesNotKeepTheRunAliveLetsTheRunFinish() throws {
        guard MemoryPressureFile.preferredPath() != nil else { return }
        let source = try MemoryPressureSource(trigger: MemoryPressureTrigger(parsing: "some 150ms 2s")) { _, _ in }
        source.keepsRunAlive = false
        let result = Box<Loop.RunResult>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(source)
            result.value = loop.run(in: .default, for: .seconds(5))
            source.invalidate()
        }
        #expect(result.value == .finished)
        #expect(!source.keepsRunAlive)
    }
}

/// Real memory pressure, confined: a child cgroup (cgroup v1's memory controller) limited to 32 MiB, in which `dd`
/// asks for a 96 MiB buffer, stalls in reclaim and is OOM-killed there, alone. The stall is counted in the
/// system's pressure (and the root cgroup's), which a trigger of 1 ms in 2 s sees. Root with a writable v1 memory
/// hierarchy only (this machine's); `nil` elsewhere, with the reason.
enum ConfinedMemoryHog {
    /// Makes the cgroup, runs the hog in it to its end, removes the cgroup; answers `nil`, or why it could not.
    static func run() -> String? {
        guard let mounts = try? FileDescriptorCalls.contents(of: "/proc/self/mountinfo"),
            let membership = try? FileDescriptorCalls.contents(of: "/proc/self/cgroup")
        else { return "no /proc" }
        let mountLine = String(decoding: mounts, as: UTF8.self).split(separator: "\n").first {
            $0.contains(" - cgroup ") && $0.hasSuffix(",memory")
        }
        let groupLine = String(decoding: membership, as: UTF8.self).split(separator: "\n").first {
            $0.split(separator: ":", maxSplits: 2).dropFirst().first == "memory"
        }
        guard let mountLine, let groupLine else { return "no cgroup v1 memory controller" }
        let point = mountLine.split(separator: " ")[4]
        let own = groupLine.split(separator: ":", maxSplits: 2)[2]
        let group = "\(point)\(own == "/" ? "" : own)/runloopkit-psi-\(getpid())"
        guard mkdir(group, 0o755) == 0 else { return "mkdir \(group): errno \(errno)" }
        defer { rmdir(group) }
        guard write("\(32 << 20)", to: group + "/memory.limit_in_bytes") else { return "cannot set a limit" }
        let script = "echo $$ > \(group)/cgroup.procs && exec dd if=/dev/zero of=/dev/null bs=96M count=1"
        var pid: pid_t = 0
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(script), nil]
        defer { arguments.forEach { free($0) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, arguments, environ) == 0 else { return "posix_spawn failed" }
        var status: CInt = 0
        waitpid(pid, &status, 0)
        return nil
    }

    private static func write(_ text: String, to path: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return text.utf8CString.withUnsafeBufferPointer { Glibc.write(descriptor, $0.baseAddress, $0.count - 1) } > 0
    }
}

extension MemoryPressureSourceTests {
    /// The live path: pressure induced in a confined child cgroup fires a source armed on this process's pressure
    /// file, on the loop's thread, with `thresholdExceeded`.
    @Test func inducedPressureFiresTheSource() throws {
        guard getuid() == 0, MemoryPressureFile.preferredPath() != nil else { return }
        let events = Recorder<MemoryPressureSource.Event>()
        let onLoopThread = ItemsSupport.Flag()
        let trigger = try MemoryPressureTrigger(parsing: "some 1ms 2s")
        let running = ItemsSupport.startRunningLoop(timeout: .seconds(30))
        let loop = running.loop
        let source = try MemoryPressureSource(trigger: trigger) { _, event in
            if Loop.current === loop { onLoopThread.set() }
            events.append(event)
        }
        try loop.add(source)
        let started = ContinuousClock.now
        if let reason = ConfinedMemoryHog.run() {
            source.invalidate()
            running.finish()
            TestFigures.report("[psi] pressure not induced: \(reason)")
            return
        }
        #expect(
            waitUntil(timeout: .seconds(10)) { events.count > 0 },
            "no event; \(String(describing: try? MemoryPressureAverages.read()))")
        let latency = ContinuousClock.now - started
        source.invalidate()
        running.finish()
        #expect(events.all.first == .thresholdExceeded)
        #expect(onLoopThread.isSet)
        TestFigures.report(
            "[psi] induced pressure fired \"\(trigger)\" on \(source.path) \(latency) after the hog started")
    }
}

/// systemd's convention: `MEMORY_PRESSURE_WATCH` and `MEMORY_PRESSURE_WRITE` replace the default file and trigger.
@Suite struct MemoryPressureWatchTests {
    /// The exact value systemd sets (`base64mem(b, strlen(b) + 1, …)`: the text and its NUL), and the same text
    /// without the NUL, both armed on a real pressure file.
    @Test(arguments: [Self.systemdWrite, "c29tZSAyMDAwMDAgMjAwMDAwMA=="])
    func theServiceManagersFileAndTriggerAreUsed(write: String) throws {
        guard FileDescriptorCalls.exists("/proc/pressure/memory") else { return }
        let environment = [
            "MEMORY_PRESSURE_WATCH": "/proc/pressure/memory",
            "MEMORY_PRESSURE_WRITE": write,
        ]
        let fallback = try MemoryPressureTrigger(parsing: "full 1s 4s")
        let source = try MemoryPressureSource(trigger: fallback, environment: environment) { _, _ in }
        defer { source.invalidate() }
        #expect(source.path == "/proc/pressure/memory")
        #expect(source.trigger.description == "some 200000 2000000")
    }

    /// What systemd sets for `MemoryPressureThresholdSec=200ms`: base64 of `"some 200000 2000000\0"`.
    static let systemdWrite = "c29tZSAyMDAwMDAgMjAwMDAwMAA="

    @Test func systemdsTrailingNULIsAcceptedAndKeptForANotifierOnly() throws {
        let request = try #require(
            try MemoryPressureWatch.request(in: [
                "MEMORY_PRESSURE_WATCH": "/x", "MEMORY_PRESSURE_WRITE": Self.systemdWrite,
            ]))
        let text = "some 200000 2000000"
        #expect(request.trigger == text)
        #expect(request.bytes == Array(text.utf8) + [0])
        let trigger = try MemoryPressureTrigger(parsing: text)
        // A pressure file gets the trigger's text and its NUL; a socket gets the bytes as decoded, as sd-event sends.
        #expect(
            MemoryPressureSource.written(to: .pressureFile, trigger: trigger, requested: request.bytes) == request.bytes
        )
        #expect(
            MemoryPressureSource.written(to: .notifierSocket, trigger: trigger, requested: request.bytes)
                == request.bytes)
        let hello = Array("hello\n".utf8)  // sd-event's own test sends "aGVsbG8K" to a notifier socket.
        #expect(MemoryPressureSource.written(to: .notifierSocket, trigger: trigger, requested: hello) == hello)
        #expect(MemoryPressureSource.written(to: .notifierSocket, trigger: trigger, requested: nil) == request.bytes)
        #expect(MemoryPressureSource.written(to: .pressureFile, trigger: trigger, requested: hello) == request.bytes)
    }

    /// A NUL anywhere but at the very end, two NULs, a lone NUL or bytes that are not UTF-8: refused, typed.
    @Test(arguments: [
        "c29tZQAgMjAwMDAwIDIwMDAwMDAA",  // "some\0 200000 2000000\0"
        "c29tZSAyMDAwMDAgMjAwMDAwMAAA",  // "some 200000 2000000\0\0"
        "//4=",  // 0xff 0xfe
    ])
    func aNULBeforeTheEndOrBytesThatAreNotTextAreRefused(write: String) {
        do throws(LoopError) {
            _ = try MemoryPressureWatch.request(in: ["MEMORY_PRESSURE_WATCH": "/x", "MEMORY_PRESSURE_WRITE": write])
            Issue.record("\(write) was accepted")
        } catch {
            #expect(error.code == .invalidArgument, "\(error)")
        }
    }

    @Test func withoutTheVariablesTheDefaultIsUsed() throws {
        #expect(try MemoryPressureWatch.request(in: [:]) == nil)
        #expect(
            try MemoryPressureWatch.request(in: ["MEMORY_PRESSURE_WATCH": "/x"])
                == MemoryPressureWatch.Request(path: "/x", trigger: nil))
    }

    @Test func turnedOffOrMalformedVariablesThrowTypedErrors() {
        let cases: [([String: String], LoopError.Code)] = [
            (["MEMORY_PRESSURE_WATCH": "/dev/null"], .unsupported),
            (["MEMORY_PRESSURE_WATCH": ""], .unsupported),
            (
                ["MEMORY_PRESSURE_WATCH": "/proc/pressure/memory", "MEMORY_PRESSURE_WRITE": "not base64!"],
                .invalidArgument
            ),
            (
                ["MEMORY_PRESSURE_WATCH": "/proc/pressure/memory", "MEMORY_PRESSURE_WRITE": "aGVsbG8="],
                .invalidArgument
            ),
        ]
        for (environment, code) in cases {
            do throws(LoopError) {
                let source = try MemoryPressureSource(
                    trigger: try MemoryPressureTrigger(parsing: "some 150ms 2s"), environment: environment
                ) { _, _ in }
                source.invalidate()
                Issue.record("\(environment): no error")
            } catch {
                #expect(error.code == code, "\(environment): \(error)")
            }
        }
        #expect(MemoryPressureWatch.decodeBase64("aGk=") == Array("hi".utf8))
        #expect(MemoryPressureWatch.decodeBase64("aGk") == Array("hi".utf8))
        #expect(MemoryPressureWatch.decodeBase64("a=Gk") == nil)
    }

    @Test func cpuAndIOPressureUseTheSameMechanism() throws {
        for path in ["/proc/pressure/cpu", "/proc/pressure/io"] where FileDescriptorCalls.exists(path) {
            let source = try MemoryPressureSource(
                trigger: try MemoryPressureTrigger(parsing: "some 150ms 2s"), path: path
            ) { _, _ in }
            #expect(source.pressureDescriptor != nil)
            source.invalidate()
        }
    }
}
