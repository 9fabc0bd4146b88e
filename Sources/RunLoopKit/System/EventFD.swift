import CRunLoopShims
import Glibc

/// The eventfd calls the loop's wake-up uses, each wrapped once.
enum EventFD {
    /// Creates a non-blocking, close-on-exec eventfd with a zero counter.
    ///
    /// The corresponding C call is `eventfd(2)`.
    static func create() throws(SystemError) -> CInt {
        opened(try retryingOnInterrupt("eventfd") { eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_NONBLOCK)) }, by: "eventfd")
    }

    /// Adds one to the counter, waking any waiter.
    ///
    /// `EAGAIN` (the counter is at its maximum, so a wake-up is pending anyway) counts as success.
    /// The corresponding C call is `write(2)`.
    static func signal(_ descriptor: CInt) throws(SystemError) {
        var one: UInt64 = 1
        do {
            _ = try retryingOnInterrupt("write", on: descriptor) {
                Glibc.write(descriptor, &one, MemoryLayout<UInt64>.size)
            }
        } catch let error where error.errno == EAGAIN {
            return
        }
    }

    /// Resets the counter to zero; `EAGAIN` (already zero) counts as success.
    ///
    /// The corresponding C call is `read(2)`.
    static func drain(_ descriptor: CInt) throws(SystemError) {
        var value: UInt64 = 0
        do {
            _ = try retryingOnInterrupt("read", on: descriptor) {
                Glibc.read(descriptor, &value, MemoryLayout<UInt64>.size)
            }
        } catch let error where error.errno == EAGAIN {
            return
        }
    }
}
