import Glibc

/// One repetition of a workload in a fresh process, as the peers are run: the runner re-executes its own binary
/// (`/proc/self/exe`) with the hidden `--one-run NAME` flag, reads the child's results from its stdout and waits for
/// it. The child inherits the CPU affinity (so `taskset -c 0` still gives `ping-pong@cpu0`), the environment (e.g.
/// `LOOP_BENCH_PASSES`) and stderr (its progress lines).
///
/// The child writes one line per result (``OneRun``); everything else on its stdout is ignored. A child that exits
/// with another status than 0, dies of a signal, or writes no results is a failed run.
///
/// Threading: main thread only (it blocks until the child has exited).
enum ChildRun {
    /// Runs the workload named `workload` once in a new process, with `--quick` if `quick`; answers its metrics and
    /// phase times in ms.
    ///
    /// - Throws: ``BenchmarkFailure`` with the child's own failure message, or saying how it ended.
    static func run(
        workload: String, quick: Bool
    ) throws -> (metrics: [Metric], phases: (setUp: Double, run: Double, tearDown: Double)) {
        let arguments = [CommandLine.arguments[0], OneRun.flag, workload] + (quick ? ["--quick"] : [])
        let (pid, output) = try spawn(arguments: arguments)
        let text = readAll(output)
        close(output)
        var status: CInt = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let parsed = OneRun.parse(text)
        if let failure = parsed.failure { throw BenchmarkFailure(failure) }
        let signal = status & 0x7f
        let exitCode = (status >> 8) & 0xff
        guard signal == 0 else { throw BenchmarkFailure("\(workload): the child process died of signal \(signal)") }
        guard exitCode == 0 else {
            throw BenchmarkFailure("\(workload): the child process exited with status \(exitCode)")
        }
        guard let phases = parsed.phases, !parsed.metrics.isEmpty else {
            throw BenchmarkFailure("\(workload): the child process reported no results")
        }
        return (parsed.metrics, phases)
    }

    /// Starts `/proc/self/exe` with `arguments` (the first is argv[0]) and its stdout on a pipe; answers the
    /// child's pid and the pipe's read end.
    private static func spawn(arguments: [String]) throws -> (pid_t, CInt) {
        var ends: [CInt] = [-1, -1]
        guard pipe(&ends) == 0 else { throw BenchmarkFailure("pipe failed, errno \(errno)") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addclose(&actions, readEnd)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, STDOUT_FILENO)
        posix_spawn_file_actions_addclose(&actions, writeEnd)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, "/proc/self/exe", &actions, nil, argv, environ)
        close(writeEnd)
        guard status == 0 else {
            close(readEnd)
            throw BenchmarkFailure("posix_spawn of /proc/self/exe failed, error \(status)")
        }
        return (pid, readEnd)
    }

    /// Everything readable from `descriptor` until end of file, as text.
    private static func readAll(_ descriptor: CInt) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += buffer[0..<count]
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
