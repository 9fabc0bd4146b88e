import CRunLoopShims
import Glibc
import RunLoopKitSystem
import TestSupport
import Testing

/// The syscall layer against the real kernel: eventfd, timerfd, epoll, errors, and close-on-exec.
@Suite struct SyscallTests {
    /// Reads an eventfd or timerfd counter; nil when the read fails (`EAGAIN` for zero).
    static func readCounter(_ descriptor: CInt) -> UInt64? {
        var value: UInt64 = 0
        return read(descriptor, &value, 8) == 8 ? value : nil
    }

    /// Waits up to `milliseconds` for `descriptor` to become readable.
    static func isReadable(_ descriptor: CInt, within milliseconds: CInt) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) == 1
    }

    static func isCloseOnExec(_ descriptor: CInt) -> Bool {
        let flags = fcntl(descriptor, F_GETFD)
        return flags != -1 && flags & FD_CLOEXEC != 0
    }

    /// Runs `body`, answering the `SystemError` it threw, if any.
    static func systemError(_ body: () throws(SystemError) -> Void) -> SystemError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func eventFDSignalAddsAndDrainResets() throws {
        let descriptor = try EventFD.create()
        defer { close(descriptor) }
        #expect(Self.isCloseOnExec(descriptor))
        #expect(Self.readCounter(descriptor) == nil)  // Zero, non-blocking: EAGAIN.
        try EventFD.signal(descriptor)
        try EventFD.signal(descriptor)
        #expect(Self.readCounter(descriptor) == 2)
        try EventFD.signal(descriptor)
        try EventFD.drain(descriptor)
        #expect(Self.readCounter(descriptor) == nil)
        try EventFD.drain(descriptor)  // Already zero: EAGAIN counts as success.
    }

    @Test func eventFDSignalAtTheMaximumCountEmptiesTheCounterAndWritesAgain() throws {
        let descriptor = try EventFD.create()
        defer { close(descriptor) }
        var full: UInt64 = 0xFFFF_FFFF_FFFF_FFFE
        #expect(write(descriptor, &full, 8) == 8)
        // The write is refused (EAGAIN) and would report nothing to an edge-triggered epoll set: the counter is read
        // to zero and written again.
        try EventFD.signal(descriptor)
        #expect(Self.readCounter(descriptor) == 1)
    }

    @Test func eventFDErrorsNameTheCall() {
        let closed = ItemsSupport.closedDescriptorNumber(slot: 1)
        let signal = Self.systemError { () throws(SystemError) in try EventFD.signal(closed) }
        #expect(signal == SystemError(call: "write", errno: EBADF))
        let drain = Self.systemError { () throws(SystemError) in try EventFD.drain(closed) }
        #expect(drain == SystemError(call: "read", errno: EBADF))
        #expect(signal?.description.contains("write failed") == true)
    }

    @Test func timerFDArmFiresAtTheAbsoluteTime() throws {
        let descriptor = try TimerFD.create()
        defer { close(descriptor) }
        #expect(Self.isCloseOnExec(descriptor))
        let deadline = MonotonicClock.now() + 30_000_000
        try TimerFD.arm(descriptor, atMonotonicNanoseconds: deadline)
        #expect(Self.isReadable(descriptor, within: 5_000))
        #expect(MonotonicClock.now() >= deadline)
        #expect(Self.readCounter(descriptor) == 1)
        // A time in the past (or zero) expires at once rather than disarming.
        try TimerFD.arm(descriptor, atMonotonicNanoseconds: 0)
        #expect(Self.isReadable(descriptor, within: 5_000))
        #expect(Self.readCounter(descriptor) == 1)
    }

    @Test func timerFDErrorsNameTheCall() {
        let closed = ItemsSupport.closedDescriptorNumber(slot: 2)
        let arm = Self.systemError { () throws(SystemError) in try TimerFD.arm(closed, atMonotonicNanoseconds: 1) }
        #expect(arm == SystemError(call: "timerfd_settime", errno: EBADF))
    }

    @Test func epollReportsReadinessWithItsTag() throws {
        let epoll = try Epoll.create()
        defer { close(epoll) }
        #expect(Self.isCloseOnExec(epoll))
        let pipe = Pipe()
        defer { pipe.close() }
        let buffer = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 8)
        defer { buffer.deallocate() }
        try Epoll.add(epoll, pipe.readEnd, events: .input, data: 0xABCD_0000_0007)
        #expect(try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: 0) == 0)
        pipe.write()
        #expect(try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: 0) == 1)
        #expect(buffer[0].data.u64 == 0xABCD_0000_0007)
        #expect(Epoll.Events(rawValue: buffer[0].events).contains(.input))
        // Level-triggered: still reported while unread.
        #expect(try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: 0) == 1)
        // Modify: no longer interested in input, new tag.
        try Epoll.modify(epoll, pipe.readEnd, events: [], data: 9)
        #expect(try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: 0) == 0)
        try Epoll.modify(epoll, pipe.readEnd, events: .input, data: 9)
        #expect(try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: 0) == 1)
        #expect(buffer[0].data.u64 == 9)
        try Epoll.remove(epoll, pipe.readEnd)
        #expect(try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: 0) == 0)
    }

    @Test func epollErrorsBecomeSystemErrorsWithTheCallName() throws {
        let epoll = try Epoll.create()
        let pipe = Pipe()
        defer { pipe.close() }
        let closed = ItemsSupport.closedDescriptorNumber(slot: 3)
        let add: (CInt) -> SystemError? = { descriptor in
            Self.systemError { () throws(SystemError) in try Epoll.add(epoll, descriptor, events: .input, data: 1) }
        }
        #expect(add(closed) == SystemError(call: "epoll_ctl(EPOLL_CTL_ADD)", errno: EBADF))
        #expect(add(pipe.readEnd) == nil)
        #expect(add(pipe.readEnd) == SystemError(call: "epoll_ctl(EPOLL_CTL_ADD)", errno: EEXIST))
        let modify = Self.systemError { () throws(SystemError) in
            try Epoll.modify(epoll, pipe.writeEnd, events: .output, data: 2)
        }
        #expect(modify == SystemError(call: "epoll_ctl(EPOLL_CTL_MOD)", errno: ENOENT))
        let remove = Self.systemError { () throws(SystemError) in try Epoll.remove(epoll, pipe.writeEnd) }
        #expect(remove == SystemError(call: "epoll_ctl(EPOLL_CTL_DEL)", errno: ENOENT))
        // An epoll set cannot watch itself.
        #expect(add(epoll) == SystemError(call: "epoll_ctl(EPOLL_CTL_ADD)", errno: EINVAL))

        close(epoll)
        let buffer = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 1)
        defer { buffer.deallocate() }
        let wait = Self.systemError { () throws(SystemError) in
            _ = try Epoll.wait(epoll, into: buffer, timeoutMilliseconds: 0)
        }
        // The number may have been reused by a parallel test; then it is no epoll set (EINVAL).
        #expect(wait?.call.description == "epoll_wait")
        #expect(wait?.errno == EBADF || wait?.errno == EINVAL)
    }
}
