import CRunLoopKitGLib
import Glibc

/// The epoll calls of the bridge's own poll set (``GLibPollSet``), each retried on `EINTR` and nothing else. They
/// answer `errno` rather than throw: the poll set decides what each failure means for a GLib descriptor.
enum PollSetEpoll {
    /// A new close-on-exec epoll set, or `errno`.
    ///
    /// The corresponding C call is `epoll_create1(2)`.
    static func create() -> Result<CInt, SystemCallFailure> {
        let descriptor = retrying { epoll_create1(CInt(EPOLL_CLOEXEC)) }
        return descriptor >= 0 ? .success(descriptor) : .failure(SystemCallFailure(call: "epoll_create1", errno: errno))
    }

    /// Adds (`EPOLL_CTL_ADD`), changes (`EPOLL_CTL_MOD`) or removes (`EPOLL_CTL_DEL`) `descriptor`; answers 0 or
    /// `errno`.
    ///
    /// The corresponding C call is `epoll_ctl(2)`.
    static func control(_ set: CInt, _ operation: CInt, _ descriptor: CInt, events: UInt32, tag: UInt64) -> CInt {
        var event = epoll_event()
        event.events = events
        event.data.u64 = tag
        return retrying { epoll_ctl(set, operation, descriptor, &event) } == 0 ? 0 : errno
    }

    /// The reports ready now, without waiting, in `buffer`; answers how many (0 on a failure, which only a bug can
    /// cause on the set's own descriptor and buffer).
    ///
    /// The corresponding C call is `epoll_wait(2)` with a zero timeout.
    static func poll(_ set: CInt, into buffer: UnsafeMutableBufferPointer<epoll_event>) -> Int {
        max(0, Int(retrying { epoll_wait(set, buffer.baseAddress, CInt(buffer.count), 0) }))
    }

    /// Runs `call` until it returns anything but -1 with `errno` `EINTR`.
    private static func retrying(_ call: () -> CInt) -> CInt {
        while true {
            let result = call()
            if result != -1 || errno != EINTR { return result }
        }
    }
}

/// A system call that failed, for a ``GLibError``'s message.
struct SystemCallFailure: Error, CustomStringConvertible {
    let call: String
    let errno: CInt

    var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}
