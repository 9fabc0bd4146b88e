import Glibc
import RunLoopKit
import TestSupport
import Testing

/// The default report handler, in a child process (an exit test) whose standard error the parent captures: only
/// that child's own output is in it, not what tests running in parallel write.
@Suite struct StallMonitorDefaultHandlerTests {
    /// Whether `descriptor` has bytes to read now.
    static func isReadable(_ descriptor: CInt) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1
    }

    /// Writes all of `bytes` to `descriptor`.
    static func writeAll(_ bytes: [UInt8], to descriptor: CInt) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            offset += written
        }
    }

    @Test func theDefaultHandlerWritesOneLineToStandardError() async throws {
        let result = await #expect(
            processExitsWith: .success, observing: [\.standardOutputContent, \.standardErrorContent]
        ) {
            let watched = try LoopThread(name: "st-default")
            // Descriptor 2 goes to a pipe while the monitor runs, so the stall can last until the handler has
            // written (however late the watchdog thread gets the CPU) instead of for a guessed time. Afterwards
            // the bytes are passed on, unchanged, to the real standard error, which the parent captures.
            var ends: [CInt] = [0, 0]
            guard pipe(&ends) == 0 else { exit(2) }
            let realStandardError = dup(STDERR_FILENO)
            dup2(ends[1], STDERR_FILENO)
            close(ends[1])
            let readEnd = ends[0]

            let monitor = try StallMonitor(loop: watched.loop)  // 50 ms, one check, the default handler.
            try watched.performAndWait {}  // The observers are in place.
            let start = Loop.Instant.now
            try watched.performAndWait {
                // The stall: at least six checks long, so a repeated report would have come; at most 10 s.
                let shortest = start + .milliseconds(300)
                let deadline = start + .seconds(10)
                while Loop.Instant.now < deadline {
                    if Loop.Instant.now >= shortest && StallMonitorDefaultHandlerTests.isReadable(readEnd) { break }
                }
            }
            let stall = Loop.Instant.now - start
            try watched.performAndWait {}  // The loop slept again: the stall is over.
            monitor.stop()  // Joins the watchdog: nothing writes to the pipe any more.

            dup2(realStandardError, STDERR_FILENO)  // Also closes the pipe's last write end.
            close(realStandardError)
            let written = readToEnd(readEnd)
            StallMonitorDefaultHandlerTests.writeAll(written, to: STDERR_FILENO)
            print("watched thread \(watched.threadID), stall \(Int(stall / .milliseconds(1))) ms")
            watched.stop()
            exit(0)
        }
        let output = String(decoding: try #require(result?.standardOutputContent), as: UTF8.self)
        let standardError = String(decoding: try #require(result?.standardErrorContent), as: UTF8.self)
        let facts = try #require(output.firstMatch(of: #/watched thread (\d+), stall (\d+) ms/#))
        let stallMilliseconds = try #require(Int(facts.2))

        // One report for one stall, a whole line (ended by a newline); whatever else the child may write to
        // standard error is not the monitor's.
        #expect(standardError.hasSuffix("\n"))
        let reports = standardError.split(separator: "\n").filter { $0.contains("RunLoopKit stall:") }
        #expect(reports.count == 1, "standard error: \(standardError)")
        let line = try #require(reports.first)
        // The loop (thread id and name), how long, after which activity, in which mode, and the threshold.
        let format =
            #/
            RunLoopKit \s stall: \s loop \s of \s thread \s (\d+) \s "st-default"
            \s busy \s for \s (\d+)\.(\d) \s ms \s after \s (\w+) \s in \s mode \s (\S+)
            \s \(threshold \s 50\.0 \s ms\)
            /#
        let match = try #require(line.wholeMatch(of: format), "report line: \(line)")
        #expect(match.1 == facts.1)  // The watched loop's thread.
        #expect(match.4 == "afterWaiting" || match.4 == "beforeSources")  // Busy in the stalled block.
        #expect(match.5 == "default")
        let duration = try #require(Int(match.2))
        #expect(duration >= 50 && duration <= stallMilliseconds)
    }
}
