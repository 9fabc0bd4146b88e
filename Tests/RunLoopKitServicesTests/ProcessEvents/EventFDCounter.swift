import Glibc
import RunLoopKit
import RunLoopKitSystem

extension EventFD {
    /// Reads and resets an eventfd's counter: the sum of the writes since the last read, 0 when there were none.
    /// For tests that count a signal relay's wake-up writes (the library only drains its eventfds).
    static func take(_ descriptor: CInt) throws(SystemError) -> UInt64 {
        var value: UInt64 = 0
        let count = Glibc.read(descriptor, &value, MemoryLayout<UInt64>.size)
        if count == -1 {
            if errno == EAGAIN { return 0 }
            throw SystemError(call: "read", errno: errno)
        }
        return value
    }
}
