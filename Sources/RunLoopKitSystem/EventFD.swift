import CRunLoopShims
import Glibc

/// The eventfd calls the loop's wake-up uses, each wrapped once.
package enum EventFD {
    /// Creates a non-blocking, close-on-exec eventfd with a zero counter.
    ///
    /// The corresponding C call is `eventfd(2)`.
    package static func create() throws(SystemError) -> CInt {
        opened(try retryingOnInterrupt("eventfd") { eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_NONBLOCK)) }, by: "eventfd")
    }

    /// Adds one to the counter, waking any waiter.
    ///
    /// Registered edge-triggered in an epoll set, the descriptor is reported by `epoll_wait` once per write,
    /// whatever the count, so a loop never needs to read it. The counter only refuses a write (`EAGAIN`) at its
    /// maximum, 2^64 − 2 unread wake-ups: then it is read to zero and written again, so this write still makes its
    /// report. (Reading makes room until 2^64 − 2 further writes land: a third refusal in a row cannot happen.)
    /// The corresponding C calls are `write(2)`, and `read(2)` in that case.
    package static func signal(_ descriptor: CInt) throws(SystemError) {
        var one: UInt64 = 1
        for _ in 0..<3 {
            do {
                _ = try retryingOnInterrupt("write", on: descriptor) {
                    Glibc.write(descriptor, &one, MemoryLayout<UInt64>.size)
                }
                return
            } catch let error where error.errno == EAGAIN {
                try drain(descriptor)
            }
        }
    }

    /// Resets the counter to zero and answers whether it was above zero; `EAGAIN` (already zero: someone else read
    /// it first) counts as success and answers `false`.
    ///
    /// The corresponding C call is `read(2)`.
    @discardableResult
    package static func drain(_ descriptor: CInt) throws(SystemError) -> Bool {
        var value: UInt64 = 0
        do {
            _ = try retryingOnInterrupt("read", on: descriptor) {
                Glibc.read(descriptor, &value, MemoryLayout<UInt64>.size)
            }
            return true
        } catch let error where error.errno == EAGAIN {
            return false
        }
    }
}
