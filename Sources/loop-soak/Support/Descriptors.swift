import Glibc

/// Making the descriptor pairs the soak streams through: pipes, socket pairs and eventfds, all non-blocking and
/// close-on-exec.
enum Descriptors {
    private typealias EventFDCall = @convention(c) (CUnsignedInt, CInt) -> CInt

    /// `eventfd(2)`, which Swift's Glibc module leaves out: looked up once in the already loaded C library.
    private static let eventFDCall: EventFDCall? = {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), "eventfd") else { return nil }
        return unsafeBitCast(address, to: EventFDCall.self)
    }()

    /// A pipe: (read end, write end).
    static func pipe() -> (read: CInt, write: CInt) {
        var ends: [CInt] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { fatalError("loop-soak: pipe failed (errno \(errno))") }
        for end in ends { configure(end) }
        return (ends[0], ends[1])
    }

    /// A connected pair of Unix stream sockets: (the end read by a loop, the end written by a driver).
    static func socketPair() -> (read: CInt, write: CInt) {
        var ends: [CInt] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &ends) == 0 else {
            fatalError("loop-soak: socketpair failed (errno \(errno))")
        }
        return (ends[0], ends[1])
    }

    /// An eventfd with a zero count.
    static func eventFD() -> CInt {
        guard let eventFDCall else { fatalError("loop-soak: eventfd is not in the C library") }
        let descriptor = eventFDCall(0, O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { fatalError("loop-soak: eventfd failed (errno \(errno))") }
        return descriptor
    }

    /// Adds `value` to the count of eventfd `descriptor`; answers whether the write succeeded.
    @discardableResult
    static func add(_ value: UInt64, toEventFD descriptor: CInt) -> Bool {
        var value = value
        return write(descriptor, &value, 8) == 8
    }

    /// Reads and resets the count of eventfd `descriptor`; 0 when it was zero.
    static func takeEventFD(_ descriptor: CInt) -> UInt64 {
        var value: UInt64 = 0
        return read(descriptor, &value, 8) == 8 ? value : 0
    }

    private static func configure(_ descriptor: CInt) {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }
}
