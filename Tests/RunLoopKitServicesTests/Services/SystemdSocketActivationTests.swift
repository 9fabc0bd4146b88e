import Foundation
import Glibc
import RunLoopKit
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKitServices

/// Socket activation: the real `systemd-socket-activate` hands listening sockets to the `socket-activation-check`
/// daemon, which answers a connection on each through a `FileDescriptorSource`; and the variables' bad forms, read
/// from a dictionary, which adopt nothing.
@Suite struct SystemdSocketActivationTests {
    static let tool = "/usr/bin/systemd-socket-activate"
    /// Present, or required: under CI=true the tests run (and fail) without it.
    static let runs =
        FileManager.default.isExecutableFile(atPath: tool)
        || ProcessInfo.processInfo.environment["CI"] == "true"

    /// Starts the daemon under systemd-socket-activate listening on one Unix socket per name, connects to each,
    /// and checks the answers and the daemon's verdict.
    func serve(names: [String]) throws {
        // Apart per test (they run in parallel): one set of paths per number of names.
        let paths = names.indices.map { "/tmp/runloopkit-activation-\(getpid())-\(names.count)-\($0).sock" }
        paths.forEach { unlink($0) }
        defer { paths.forEach { unlink($0) } }
        let arguments =
            paths.flatMap { ["-l", $0] } + ["--fdname=\(names.joined(separator: ":"))"]
            + [TestExecutable.path(of: "socket-activation-check"), "serve"] + names
        let child = try TestExecutable.start(executable: Self.tool, arguments: arguments)
        var answers: [String] = []
        for (path, name) in zip(paths, names) {
            answers.append(try Self.ask(path, "hello \(name)\n"))
        }
        let (status, output) = try child.wait(timeout: .seconds(60))
        #expect(answers == names.map { "\($0) hello \($0)\n" })
        #expect(status == 0 && output.contains("PASS serve"), "exit \(status), output:\n\(output)")
    }

    /// Connects to the Unix socket at `path` (waiting up to 10 s for it to appear), sends `line`, answers the
    /// reply.
    static func ask(_ path: String, _ line: String) throws -> String {
        let deadline = ContinuousClock.now + .seconds(10)
        let connection = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(connection) }
        var (address, length) = UnixSocketAddress.make(Array(path.utf8))
        while true {
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(connection, $0, length) }
            }
            if connected == 0 { break }
            guard ContinuousClock.now < deadline else {
                throw TestExecutable.Failure(description: "connect \(path): errno \(errno)")
            }
            usleep(5_000)  // The socket appears once systemd-socket-activate has bound it.
        }
        _ = write(connection, line, line.utf8.count)
        var buffer = [UInt8](repeating: 0, count: 256)
        var reply: [UInt8] = []
        while true {
            var entry = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 10_000) == 1 else { throw TestExecutable.Failure(description: "no reply") }
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { break }
            reply += buffer[..<count]
        }
        return String(decoding: reply, as: UTF8.self)
    }

    @Test(.enabled(if: runs, "systemd-socket-activate is not installed (Debian's systemd package; CI installs it)"))
    func aListeningSocketIsAdoptedAndAConnectionAnswered() throws {
        try serve(names: ["web"])
    }

    @Test(.enabled(if: runs, "systemd-socket-activate is not installed (Debian's systemd package; CI installs it)"))
    func severalNamedSocketsAreEachReachableByName() throws {
        try serve(names: ["web", "admin", "metrics"])
    }

    /// `Accept=yes` (`--accept`): one daemon per connection, handed the connected socket, which it answers.
    @Test(.enabled(if: runs, "systemd-socket-activate is not installed (Debian's systemd package; CI installs it)"))
    func aConnectionPassedAsUnderAcceptYesIsAnswered() throws {
        let path = "/tmp/runloopkit-activation-\(getpid())-accept.sock"
        unlink(path)
        defer { unlink(path) }
        let arguments = [
            "--accept", "-l", path, "--fdname=conn", TestExecutable.path(of: "socket-activation-check"), "connection",
            "conn",
        ]
        let activator = try TestExecutable.start(executable: Self.tool, arguments: arguments)
        let answer = try Self.ask(path, "hello\n")
        // The activator keeps listening for the next connection: wait for the daemon's verdict, then end it.
        let deadline = ContinuousClock.now + .seconds(30)
        while !activator.output.contains("PASS connection") && ContinuousClock.now < deadline { usleep(10_000) }
        kill(activator.pid, SIGKILL)  // It may have inherited a blocked SIGTERM from the test thread.
        let (_, output) = try activator.wait(timeout: .seconds(30))
        #expect(answer == "conn hello\n")
        #expect(output.contains("PASS connection conn"), "output:\n\(output)")
    }

    /// `ListenDatagram=` (`--datagram`): the daemon is handed the datagram socket and reads the datagram that woke
    /// it.
    @Test(.enabled(if: runs, "systemd-socket-activate is not installed (Debian's systemd package; CI installs it)"))
    func aDatagramSocketIsAdoptedAndItsDatagramRead() throws {
        let path = "/tmp/runloopkit-activation-\(getpid())-datagram.sock"
        unlink(path)
        defer { unlink(path) }
        let arguments = [
            "--datagram", "-l", path, TestExecutable.path(of: "socket-activation-check"), "datagram", "ping",
        ]
        let activator = try TestExecutable.start(executable: Self.tool, arguments: arguments)
        let sender = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(sender) }
        var (address, length) = UnixSocketAddress.make(Array(path.utf8))
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender, "ping", 4, 0, $0, length) }
            }
            if sent == 4 || ContinuousClock.now >= deadline { break }
            usleep(5_000)  // The socket appears once systemd-socket-activate has bound it.
        }
        let (status, output) = try activator.wait(timeout: .seconds(60))
        #expect(status == 0 && output.contains("PASS datagram ping"), "exit \(status), output:\n\(output)")
    }

    @Test func withoutTheVariablesOrForAnotherProcessNothingIsAdopted() throws {
        #expect(try SystemdSocketActivation.adopt(environment: [:]).isEmpty)
        #expect(try SystemdSocketActivation.adopt(environment: ["LISTEN_FDS": "2"]).isEmpty)
        let other = ["LISTEN_PID": "\(getppid())", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "a:b"]
        #expect(try SystemdSocketActivation.adopt(environment: other).isEmpty)
        #expect(try SystemdSocketActivation.adopt(environment: ["LISTEN_PID": "\(getpid())"]).isEmpty)
    }

    /// `LISTEN_PIDFDID` (systemd 258+) tells a reused pid apart: another process's pidfd inode adopts nothing, and
    /// where the kernel gives pidfds no inode of their own there is nothing to compare.
    @Test func aPidFDIdentityOfAnotherProcessAdoptsNothing() throws {
        let variables = SystemdSocketActivation.Variables(pid: "42", pidFDID: "7", count: "2", names: "a:b")
        #expect(try variables.promise(processID: 42, processIdentity: { 8 }) == nil)
        let promise = SystemdSocketActivation.Promise(count: 2, names: "a:b")
        #expect(try variables.promise(processID: 42, processIdentity: { 7 }) == promise)
        #expect(try variables.promise(processID: 42, processIdentity: { nil }) == promise)
        #expect(try variables.promise(processID: 43, processIdentity: { 7 }) == nil)
    }

    /// What the text promises, checked as sd_listen_fds_with_names checks it: names counted, an empty
    /// `LISTEN_FDNAMES` holding none.
    @Test func theVariablesAreReadAsSdListenFdsWithNamesReadsThem() throws {
        func promise(_ count: String?, _ names: String?) throws(LoopError) -> SystemdSocketActivation.Promise? {
            try SystemdSocketActivation.Variables(pid: "42", count: count, names: names)
                .promise(processID: 42, processIdentity: { nil })
        }
        #expect(try promise("3", nil) == .init(count: 3, names: nil))
        #expect(try promise("3", "a::c") == .init(count: 3, names: "a::c"))
        #expect(try promise("1", "web") == .init(count: 1, names: "web"))
        #expect(try promise("2147483644", nil) == .init(count: 2_147_483_644, names: nil))
        #expect(try promise(nil, "web") == nil)
        #expect(throws: LoopError.self) { try promise("1", "") }
        #expect(throws: LoopError.self) { try promise("2147483645", nil) }
    }

    @Test func malformedVariablesThrowTypedErrorsAndAdoptNothing() throws {
        let me = "\(getpid())"
        let cases: [([String: String], LoopError.Code)] = [
            (["LISTEN_PID": "me", "LISTEN_FDS": "1"], .invalidArgument),
            (["LISTEN_PID": "-4", "LISTEN_FDS": "1"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "one"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "-1"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "99999999999"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "2", "LISTEN_FDNAMES": "only-one"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "1", "LISTEN_FDNAMES": "a:b"], .invalidArgument),
            // sd_listen_fds answers -EINVAL for these too: zero (systemd sets nothing when it passes nothing), empty
            // values, a sign or a space, an empty name list for one descriptor, a pidfd id that is no number.
            (["LISTEN_PID": me, "LISTEN_FDS": "0"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "0", "LISTEN_FDNAMES": ""], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": ""], .invalidArgument),
            (["LISTEN_PID": "", "LISTEN_FDS": "1"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "+1"], .invalidArgument),
            (["LISTEN_PID": " \(me)", "LISTEN_FDS": "1"], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_FDS": "1", "LISTEN_FDNAMES": ""], .invalidArgument),
            (["LISTEN_PID": me, "LISTEN_PIDFDID": "x", "LISTEN_FDS": "1"], .invalidArgument),
            // Far beyond what this process has open: promised, not passed.
            (["LISTEN_PID": me, "LISTEN_FDS": "60000"], .badDescriptor),
            // The largest count there can be: it aborted the process ("failed to allocate 34359738336 bytes")
            // when an entry and a name were made for each before any was checked.
            (["LISTEN_PID": me, "LISTEN_FDS": "2147483644"], .badDescriptor),
            (["LISTEN_PID": me, "LISTEN_FDS": "2147483644", "LISTEN_FDNAMES": "a"], .invalidArgument),
        ]
        for (environment, code) in cases {
            do throws(LoopError) {
                let adopted = try SystemdSocketActivation.adopt(environment: environment)
                Issue.record("\(environment): adopted \(adopted.descriptors.count), no error")
            } catch {
                #expect(error.code == code, "\(environment): \(error)")
            }
        }
    }
}
