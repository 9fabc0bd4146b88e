// A socket-activated daemon on Loop.main, for SocketActivationTests, which starts it under the real
// systemd-socket-activate. It adopts the passed descriptors, checks what sd_listen_fds promises (names, close-on-exec,
// the variables gone from the environment), then answers one connection per listening socket through
// FileDescriptorSources: "<name> <line>" back for each line read. Two more scenarios take what `Accept=yes` passes
// (one connection) and what `ListenDatagram=` passes (a datagram socket). Last line: "PASS <scenario>" (exit 0) or
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
    for variable in ["LISTEN_PID", "LISTEN_PIDFDID", "LISTEN_FDS", "LISTEN_FDNAMES"] where getenv(variable) != nil {
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

/// `connection NAME`: as under `Accept=yes`, the one passed descriptor is a connection, not a listener: answered as
/// is, through a `FileDescriptorSource`.
func answerConnection(expecting name: String) throws {
    let activation = try SystemdSocketActivation.adopt()
    guard activation.descriptors.count == 1, let passed = activation.descriptors.first, passed.name == name else {
        fail("descriptors \(activation.descriptors), expected one named \(name)")
    }
    guard socketOption(passed.descriptor, SO_ACCEPTCONN) == 0 else { fail("the passed socket is a listener") }
    try Loop.main.add(answering(passed.descriptor, as: passed.name) { Loop.main.stop() })
    Loop.main.mainQueueKeepsRunAlive = false
    Loop.main.run()
    print("PASS connection \(name)")
}

/// `datagram TEXT`: the passed descriptor is a datagram socket (`ListenDatagram=`); the datagram that woke the
/// service, read through a `FileDescriptorSource`, must be TEXT.
func readDatagram(expecting text: String) throws {
    let activation = try SystemdSocketActivation.adopt()
    guard activation.descriptors.count == 1, let passed = activation.descriptors.first else {
        fail("descriptors \(activation.descriptors), expected one")
    }
    guard socketOption(passed.descriptor, SO_TYPE) == CInt(SOCK_DGRAM.rawValue) else {
        fail("the passed socket is not a datagram socket")
    }
    let received = Mutex("")
    let source = try FileDescriptorSource(descriptor: passed.descriptor, events: .readable) { source, _ in
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = recv(passed.descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { fail("recv: \(count), errno \(errno)") }
        received.withLock { $0 = String(decoding: buffer[..<count], as: UTF8.self) }
        source.invalidate()
    }
    try Loop.main.add(source)
    Loop.main.mainQueueKeepsRunAlive = false
    Loop.main.run()  // Ends when the source is gone.
    let datagram = received.withLock { $0 }
    guard datagram == text else { fail("received \"\(datagram)\", expected \"\(text)\"") }
    print("PASS datagram \(text) (name \(passed.name))")
}

/// An integer socket option of `descriptor`, or -1.
func socketOption(_ descriptor: CInt, _ option: CInt) -> CInt {
    var value: CInt = -1
    var length = socklen_t(MemoryLayout<CInt>.size)
    guard getsockopt(descriptor, SOL_SOCKET, option, &value, &length) == 0 else { return -1 }
    return value
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "serve": try serve(expecting: Array(arguments.dropFirst()))
    case "connection" where arguments.count == 2: try answerConnection(expecting: arguments[1])
    case "datagram" where arguments.count == 2: try readDatagram(expecting: arguments[1])
    default:
        print("usage: socket-activation-check serve NAME... | connection NAME | datagram TEXT")
        exit(2)
    }
} catch {
    fail("\(error)")
}
