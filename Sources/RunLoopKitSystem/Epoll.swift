import CRunLoopShims
import Glibc

/// The epoll calls, each wrapped once.
package enum Epoll {
    /// Readiness bits as the kernel reports them, with the C spellings' values.
    package struct Events: OptionSet, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let input = Events(rawValue: EPOLLIN.rawValue)
        package static let output = Events(rawValue: EPOLLOUT.rawValue)
        package static let priority = Events(rawValue: EPOLLPRI.rawValue)
        package static let error = Events(rawValue: EPOLLERR.rawValue)
        package static let hangUp = Events(rawValue: EPOLLHUP.rawValue)
        package static let readHangUp = Events(rawValue: EPOLLRDHUP.rawValue)
        package static let edgeTriggered = Events(rawValue: EPOLLET.rawValue)
        package static let oneShot = Events(rawValue: EPOLLONESHOT.rawValue)
    }

    /// Creates a close-on-exec epoll instance.
    ///
    /// The corresponding C call is `epoll_create1(2)`.
    package static func create() throws(SystemError) -> CInt {
        opened(try retryingOnInterrupt("epoll_create1") { epoll_create1(CInt(EPOLL_CLOEXEC)) }, by: "epoll_create1")
    }

    /// Adds `descriptor` to the set with `events`, tagging its reports with `data`.
    ///
    /// The corresponding C call is `epoll_ctl(2)` with `EPOLL_CTL_ADD`.
    package static func add(_ epoll: CInt, _ descriptor: CInt, events: Events, data: UInt64) throws(SystemError) {
        _ = try retryingOnInterrupt("epoll_ctl(EPOLL_CTL_ADD)", on: descriptor) {
            control(epoll, EPOLL_CTL_ADD, descriptor, events: events, data: data)
        }
    }

    /// Changes the events and tag of a descriptor already in the set.
    ///
    /// The corresponding C call is `epoll_ctl(2)` with `EPOLL_CTL_MOD`.
    package static func modify(_ epoll: CInt, _ descriptor: CInt, events: Events, data: UInt64) throws(SystemError) {
        _ = try retryingOnInterrupt("epoll_ctl(EPOLL_CTL_MOD)", on: descriptor) {
            control(epoll, EPOLL_CTL_MOD, descriptor, events: events, data: data)
        }
    }

    /// Removes `descriptor` from the set.
    ///
    /// The corresponding C call is `epoll_ctl(2)` with `EPOLL_CTL_DEL`.
    package static func remove(_ epoll: CInt, _ descriptor: CInt) throws(SystemError) {
        _ = try retryingOnInterrupt("epoll_ctl(EPOLL_CTL_DEL)", on: descriptor) {
            control(epoll, EPOLL_CTL_DEL, descriptor, events: [], data: 0)
        }
    }

    /// One `epoll_ctl` attempt; each operation is retried under its own name, so errors and scripted faults
    /// say which one failed.
    private static func control(
        _ epoll: CInt,
        _ operation: CInt,
        _ descriptor: CInt,
        events: Events,
        data: UInt64
    ) -> CInt {
        var event = epoll_event()
        event.events = events.rawValue
        event.data.u64 = data
        return epoll_ctl(epoll, operation, descriptor, &event)
    }

    /// Waits for readiness, filling `buffer`; answers how many entries were filled.
    ///
    /// `timeoutMilliseconds` is 0 (poll) or -1 (block): the loop keeps every deadline in its timerfd,
    /// so an `EINTR` can simply be retried without recomputing a remaining timeout.
    /// The corresponding C call is `epoll_wait(2)`.
    @inline(never)
    package static func wait(
        _ epoll: CInt,
        into buffer: UnsafeMutableBufferPointer<epoll_event>,
        timeoutMilliseconds: CInt
    ) throws(SystemError) -> Int {
        let count = try retryingOnInterrupt("epoll_wait") {
            epoll_wait(epoll, buffer.baseAddress, CInt(buffer.count), timeoutMilliseconds)
        }
        return Int(count)
    }
}
