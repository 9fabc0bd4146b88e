// A socket-activated daemon on Loop.main, for SocketActivationTests, which starts it under the real
// systemd-socket-activate. It adopts the passed descriptors, checks what sd_listen_fds promises (names, close-on-exec,
// the variables gone from the environment), then answers one connection per listening socket through
// FileDescriptorSources: "<name> <line>" back for each line read. Last line: "PASS <scenario>" (exit 0) or
// "FAIL <scenario>: <why>" (exit 1).
import Glibc
import RunLoopKit
import RunLoopKitServices
import Synchronization

func fail(_ why: String) -> Never {
    print("FAIL \(CommandLine.arguments.dropFirst().first ?? ""): \(why)")
    exit(1)
}

/// `serve NAME...`: the passed sockets must carry these names, in order; one connection on each is answered.
func serve(expecting names: [String]) throws {
    let activation = try SystemdSocketActivation.adopt()
    guard activation.descriptors.map(\.name) == names else {
        fail("names \(activation.descriptors.map(\.name)), expected \(names)")
    }
    for variable in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] where getenv(variable) != nil {
        fail("\(variable) is still in the environment")
    }
    for passed in activation.descriptors where fcntl(passed.descriptor, F_GETFD) & FD_CLOEXEC == 0 {
        fail("descriptor \(passed.descriptor) is not close-on-exec")
    }
    let unanswered = Atomic(names.count)
    for passed in activation.descriptors {
        let listener = try FileDescriptorSource(descriptor: passed.descriptor, events: .readable) { _, _ in
            let connection = accept(passed.descriptor, nil, nil)
            guard connection >= 0 else { fail("accept4: errno \(errno)") }
            do {
                try Loop.main.add(
                    answering(connection, as: passed.name) {
                        if unanswered.subtract(1, ordering: .relaxed).newValue == 0 { Loop.main.stop() }
                    })
            } catch {
                fail("adding the connection: \(error)")
            }
        }
        try Loop.main.add(listener)
    }
    Loop.main.mainQueueKeepsRunAlive = false
    Loop.main.run()
    print("PASS serve \(names.joined(separator: " "))")
}

/// A source that reads one line from `connection`, writes "<name> <line>" back, closes it and calls `done`.
func answering(_ connection: CInt, as name: String, done: @escaping @Sendable () -> Void) throws -> FileDescriptorSource
{
    try FileDescriptorSource(descriptor: connection, events: .readable) { source, _ in
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(connection, &buffer, buffer.count)
        guard count > 0 else { fail("read: \(count), errno \(errno)") }
        let reply = Array("\(name) ".utf8) + buffer[..<count]
        guard write(connection, reply, reply.count) == reply.count else { fail("write: errno \(errno)") }
        source.invalidate()
        close(connection)
        done()
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "serve": try serve(expecting: Array(arguments.dropFirst()))
    default:
        print("usage: socket-activation-check serve NAME...")
        exit(2)
    }
} catch {
    fail("\(error)")
}
