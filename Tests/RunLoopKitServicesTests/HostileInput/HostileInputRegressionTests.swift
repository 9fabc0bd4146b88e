import Foundation
import Glibc
import RunLoopKit
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKitServices

/// What fuzzing the parsers of outside input hardened (Docs/Reliability.md, "Hostile input"): each defect, as a test
/// of its own.
@Suite struct HostileInputRegressionTests {
    /// A record whose name runs past what was read, or a tail shorter than a record: the walk stops there and says
    /// so (the source then reports `overflow`); it used to slice the name past the end of the read.
    @Test func anInotifyBufferEndingInAPartialRecordIsNotReadPastItsEnd() {
        func record(len: UInt32, name: [UInt8] = []) -> [UInt8] {
            var header = inotify_event()
            header.wd = 1
            header.mask = UInt32(IN_CREATE)
            header.len = len
            return withUnsafeBytes(of: &header) { Array($0) } + name
        }
        let whole = record(len: 16, name: Array("file".utf8) + [UInt8](repeating: 0, count: 12))
        var names: [String?] = []
        let walk = { (bytes: [UInt8]) -> Bool in
            names = []
            return bytes.withUnsafeBytes { buffer in
                FileChangeSource.forEachRecord(in: buffer) { _, name in
                    names.append(name)
                    return true
                }
            }
        }
        #expect(walk(whole + record(len: 0)) && names == ["file", nil])
        #expect(!walk(whole + record(len: 4_096, name: Array("cut".utf8))) && names == ["file"])
        #expect(!walk(whole + [1, 2, 3]) && names == ["file"])
        #expect(!walk(record(len: UInt32.max)) && names.isEmpty)
    }

    /// A NUL in a notification would end the whole message where systemd reads it (the lines after it lost), and
    /// in a path it would name another socket: both refused before anything is sent.
    @Test func aNULInANotificationOrItsSocketPathIsAnInvalidArgument() {
        let cases: [([String], String)] = [
            (["STATUS=a\0", "READY=1"], "/run/systemd/notify"),
            (["READY=1"], "/run/systemd/notify\0/elsewhere"),
            (["READY=1"], "@"),
        ]
        for (assignments, address) in cases {
            do throws(LoopError) {
                _ = try SystemdNotifier.datagram(assignments, to: address)
                Issue.record("\(assignments) to \(address) was accepted")
            } catch {
                #expect(error.code == .invalidArgument, "\(error)")
            }
        }
        #expect((try? SystemdNotifier.datagram(["READY=1"], to: "@a\0b"))?.address == [0] + Array("a\0b".utf8))
    }

    /// `WATCHDOG_USEC` and `WATCHDOG_PID` as sd_watchdog_enabled reads them: a malformed pid used to count as another
    /// process's (no watchdog, silently).
    @Test func malformedWatchdogVariablesAreInvalidArguments() throws {
        func interval(_ timeout: String?, _ pid: String?) throws(LoopError) -> Duration? {
            try SystemdWatchdog.keepAliveInterval(timeout: timeout, pid: pid, processID: 42)
        }
        #expect(try interval("200000", "42") == .milliseconds(100))
        #expect(try interval("200000", nil) == .milliseconds(100))
        #expect(try interval("200000", "43") == nil)
        #expect(try interval(nil, "42") == nil)
        #expect(try interval("9223372036854775807", nil) == .microseconds(Int64.max) / 2)
        for (timeout, pid) in [
            ("", nil), ("0", nil), ("-1", nil), ("+5", nil), ("1e6", nil), ("18446744073709551615", nil),
            ("200000", ""), ("200000", "me"), ("200000", "-42"), ("200000", "0"), ("200000", " 42"),
        ] as [(String?, String?)] {
            do throws(LoopError) {
                let answer = try interval(timeout, pid)
                Issue.record(
                    "\(String(describing: timeout)), \(String(describing: pid)): \(String(describing: answer))")
            } catch {
                #expect(error.code == .invalidArgument, "\(error)")
            }
        }
    }

    /// The largest timeout there is: a typed error or a watchdog, never a trap.
    @Test func theLargestWatchdogTimeoutIsNoTrap() throws {
        let manager = NotifySocketStandIn()
        defer { manager.close() }
        let thread = try LoopThread(name: "watchdog-largest")
        defer { thread.stop() }
        let environment = ["NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "9223372036854775807"]
        do throws(LoopError) {
            let watchdog = try SystemdWatchdog.start(on: thread.loop, environment: environment)
            watchdog?.stop()
        } catch {
            #expect(error.code == .invalidInterval, "\(error)")
        }
    }

    /// What the kernel never writes in a pressure file is not PSI: a share that is not a number in 0...100, a
    /// negative total.
    @Test func pressureAveragesOutOfTheirRangeAreNotPSI() {
        let good =
            "some avg10=0.00 avg60=0.12 avg300=0.05 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=6543\n"
        #expect(MemoryPressureAverages(parsing: good) != nil)
        for (bad, by) in [("0.12", "nan"), ("0.12", "inf"), ("0.12", "-1"), ("0.12", "100.5"), ("6543", "-6543")] {
            #expect(MemoryPressureAverages(parsing: good.replacingOccurrences(of: bad, with: by)) == nil, "\(by)")
        }
    }

    /// A path that never ends (`/dev/zero`) is read up to a bound, not until memory runs out.
    @Test func aFileThatNeverEndsIsReadUpToABound() {
        do throws(LoopError) {
            _ = try MemoryPressureAverages.read(from: "/dev/zero")
            Issue.record("/dev/zero read as PSI")
        } catch {
            #expect(error.code == .systemCallFailed && error.errno == EFBIG, "\(error)")
        }
    }

    /// `MEMORY_PRESSURE_WATCH` as sd-event takes it: absolute and normalized (`path_is_normalized`), no NUL.
    @Test func aMemoryPressurePathThatIsNotNormalizedIsRefused() {
        for path in ["/proc/pressure/memory", "/", "/sys/fs/cgroup/a.service/", "/a/.hidden", "/a/..b"] {
            #expect(MemoryPressureWatch.isNormalizedAbsolutePath(path), "\(path)")
        }
        for path in [
            "proc/pressure/memory", "", "//proc", "/proc//pressure", "/proc/./x", "/proc/../etc/passwd",
            "/proc/..", "/proc/.", "/a\0b", "/" + String(repeating: "a", count: 4_096),
        ] {
            #expect(!MemoryPressureWatch.isNormalizedAbsolutePath(path), "\(path)")
            do throws(LoopError) {
                _ = try MemoryPressureWatch.request(in: ["MEMORY_PRESSURE_WATCH": path])
                if !path.isEmpty { Issue.record("\(path) was accepted") }
            } catch {
                #expect(error.code == (path.isEmpty ? .unsupported : .invalidArgument), "\(error)")
            }
        }
    }
}
