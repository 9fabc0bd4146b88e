import CRunLoopShims
import Glibc

/// The epoll calls, each wrapped once.
public enum Epoll {
    /// Readiness bits as the kernel reports them, with the C spellings' values.
    ///
    /// Its members, and the set operations the loop applies to every report, are inlinable: called through the
    /// `SetAlgebra` witness table of another module they would cost a call per bit tested (P, the pass-cost
    /// benchmark: +6% instructions). Each is a mask operation.
    @frozen public struct Events: OptionSet, Sendable {
        /// The bits, as `epoll_event.events` holds them.
        public var rawValue: UInt32
        /// The events of `rawValue`'s bits.
        @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// `EPOLLIN`: readable.
        @inlinable public static var input: Events { Events(rawValue: EPOLLIN.rawValue) }
        /// `EPOLLOUT`: writable.
        @inlinable public static var output: Events { Events(rawValue: EPOLLOUT.rawValue) }
        /// `EPOLLPRI`: exceptional data (urgent data, a PSI trigger).
        @inlinable public static var priority: Events { Events(rawValue: EPOLLPRI.rawValue) }
        /// `EPOLLERR`: an error is pending; always reported.
        @inlinable public static var error: Events { Events(rawValue: EPOLLERR.rawValue) }
        /// `EPOLLHUP`: hung up; always reported.
        @inlinable public static var hangUp: Events { Events(rawValue: EPOLLHUP.rawValue) }
        /// `EPOLLRDHUP`: the peer shut down writing.
        @inlinable public static var readHangUp: Events { Events(rawValue: EPOLLRDHUP.rawValue) }
        /// `EPOLLET`: edge-triggered reports.
        @inlinable public static var edgeTriggered: Events { Events(rawValue: EPOLLET.rawValue) }
        /// `EPOLLONESHOT`: one report, then nothing until the entry is changed.
        @inlinable public static var oneShot: Events { Events(rawValue: EPOLLONESHOT.rawValue) }

        /// Whether every bit of `member` is set.
        @inlinable public func contains(_ member: Events) -> Bool { rawValue & member.rawValue == member.rawValue }
        /// Whether no bit of `other` is set.
        @inlinable public func isDisjoint(with other: Events) -> Bool { rawValue & other.rawValue == 0 }
        /// The bits of both.
        @inlinable public func union(_ other: Events) -> Events { Events(rawValue: rawValue | other.rawValue) }
        /// The bits set in both.
        @inlinable public func intersection(_ other: Events) -> Events { Events(rawValue: rawValue & other.rawValue) }
        /// The bits not in `other`.
        @inlinable public func subtracting(_ other: Events) -> Events { Events(rawValue: rawValue & ~other.rawValue) }
        /// Sets `member`'s bits; answers whether any was not set yet.
        @inlinable @discardableResult
        public mutating func insert(_ member: Events) -> (inserted: Bool, memberAfterInsert: Events) {
            let inserted = !contains(member)
            rawValue |= member.rawValue
            return (inserted, member)
        }
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
